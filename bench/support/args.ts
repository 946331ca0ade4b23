// Option parsers the benchmarks' command lines share (commander argParser functions): a bad value is
// reported by commander with the option's name and this message.
import { InvalidArgumentError } from 'commander';

export function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError(`not a positive integer: ${value}`);
  return parsed;
}

export function nonNegativeInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new InvalidArgumentError(`not a non-negative integer: ${value}`);
  return parsed;
}

/** A comma-separated list, e.g. `100,1000`. */
export function positiveIntegers(value: string): number[] {
  const parsed = value.split(',').map((part) => Number(part.trim()));
  if (parsed.length === 0 || parsed.some((n) => !Number.isInteger(n) || n < 1)) throw new InvalidArgumentError(`not a list of positive integers: ${value}`);
  return parsed;
}
