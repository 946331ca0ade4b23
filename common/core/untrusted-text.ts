// Text an Envoy chose (its node id, its NACK's error_detail.message) ends up in Kubernetes conditions
// that every user of a tracked object reads, in `kubectl describe`, and in the CLI on a terminal. The
// Envoy is not trusted (docs/SECURITY.md, "Threat model"), so before such text is shown it loses what
// could change how the rest of the line reads: control characters (terminal escape sequences, line
// breaks that forge a second line), Unicode format characters (bidirectional overrides, zero-width
// joiners that make two ids look alike), line and paragraph separators, and unpaired surrogates. Each
// is replaced, not dropped, so an edited string never passes for another one that was not edited.

/** What every character that cannot be shown safely becomes. */
export const UNSAFE_CHARACTER_REPLACEMENT = '\uFFFD';

// C0 controls (tab and newlines included: a condition message is one line), DEL, C1 controls, the
// Unicode format category (Cf: bidi overrides and isolates, zero-width characters, soft hyphen, BOM),
// line/paragraph separators, and lone surrogates (the `u` flag matches them as single code units).
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/gu;

/** Whether `text` holds a character `displaySafe` would replace. */
export function hasUnsafeCharacters(text: string): boolean {
  return firstUnsafeCharacter(text) !== undefined;
}

/** `text` with every unsafe character replaced by U+FFFD (length in code units may change by none). */
export function displaySafe(text: string): string {
  return text.replace(UNSAFE, UNSAFE_CHARACTER_REPLACEMENT);
}

/** The first unsafe character of `text`, as `U+XXXX` at its index, for an error that names it. */
export function firstUnsafeCharacter(text: string): { index: number; codePoint: string } | undefined {
  UNSAFE.lastIndex = 0;
  const match = UNSAFE.exec(text);
  UNSAFE.lastIndex = 0;
  if (match === null) return undefined;
  const code = match[0].codePointAt(0) ?? 0;
  return { index: match.index, codePoint: `U+${code.toString(16).toUpperCase().padStart(4, '0')}` };
}
