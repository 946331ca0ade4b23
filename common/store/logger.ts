// The logging the store needs, as a narrow interface so any pino logger (or child) fits.
export interface StoreLogger {
  warn(context: Record<string, unknown>, message: string): void;
}
