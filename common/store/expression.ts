// Builds DynamoDB expression placeholders. Every attribute name goes through a `#name` placeholder
// because DynamoDB reserves hundreds of words (OBJECT, STATUS, GROUP, TYPES ... are all reserved,
// "Reserved words in DynamoDB", Developer Guide) and map keys such as type URLs or lineages contain
// characters ('.', '/') that are path syntax in expressions.
export class ExpressionBuilder {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private readonly nameByAttribute = new Map<string, string>();
  private valueCount = 0;

  /** `#nN` for an attribute name or map key; the same name gets the same placeholder. */
  name(attribute: string): string {
    let placeholder = this.nameByAttribute.get(attribute);
    if (placeholder === undefined) {
      placeholder = `#n${this.nameByAttribute.size}`;
      this.nameByAttribute.set(attribute, placeholder);
      this.names[placeholder] = attribute;
    }
    return placeholder;
  }

  /** A document path `#a.#b.#c` (each segment is one attribute name or map key). */
  path(...segments: string[]): string {
    return segments.map((segment) => this.name(segment)).join('.');
  }

  /** `:vN` for a value. */
  value(value: unknown): string {
    const placeholder = `:v${this.valueCount++}`;
    this.values[placeholder] = value;
    return placeholder;
  }

  /** ExpressionAttributeValues, or undefined when none (DynamoDB rejects an empty map). */
  valuesOrUndefined(): Record<string, unknown> | undefined {
    return this.valueCount === 0 ? undefined : this.values;
  }
}
