// A started part of the local system. startLocalSystem keeps them on a stack and closes them in
// reverse start order, so nothing is closed while something started after it still uses it.
export interface Component {
  name: string;
  close(): Promise<void>;
}

/** Closes components newest first; one failing close is logged and does not stop the others. */
export async function closeAll(
  components: Component[],
  onError: (name: string, error: unknown) => void,
  onClosed: (name: string, ms: number) => void = () => undefined,
): Promise<void> {
  while (components.length > 0) {
    const component = components.pop();
    if (component === undefined) break;
    const startedAt = Date.now();
    try {
      await component.close();
      onClosed(component.name, Date.now() - startedAt);
    } catch (error) {
      onError(component.name, error);
    }
  }
}
