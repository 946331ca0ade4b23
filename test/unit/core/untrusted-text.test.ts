// What an Envoy chose (node id, NACK text) is shown in conditions and on terminals only with the
// characters that could forge or reorder text replaced (common/core/untrusted-text.ts).
import fc from 'fast-check';
import { NODE_LIMITS, UNSAFE_CHARACTER_REPLACEMENT, checkGroupKey, checkNodeFields, displaySafe, hasUnsafeCharacters, type NodeFields } from '../../../common/core';

const R = UNSAFE_CHARACTER_REPLACEMENT;

describe('displaySafe', () => {
  it.each<[string, string, string]>([
    ['a terminal escape sequence', 'envoy-\u001b[2J\u001b[31mred', `envoy-${R}[2J${R}[31mred`],
    ['a newline forging a second line', 'bad route\nProgrammed: 10/10', `bad route${R}Programmed: 10/10`],
    ['a carriage return and a tab', 'a\rb\tc', `a${R}b${R}c`],
    ['a right-to-left override', 'envoy-\u202Egnp.exe', `envoy-${R}gnp.exe`],
    ['a zero-width space making two ids look alike', 'envoy\u200B-0', `envoy${R}-0`],
    ['DEL and a C1 control', 'x\u007Fy\u0085z', `x${R}y${R}z`],
    ['a line separator', 'a\u2028b', `a${R}b`],
    ['an unpaired surrogate', 'a\uD800b', `a${R}b`],
  ])('replaces %s', (_what, input, expected) => {
    expect(hasUnsafeCharacters(input)).toBe(true);
    expect(displaySafe(input)).toBe(expected);
  });

  it('leaves ordinary text, other scripts and emoji alone', () => {
    for (const text of ['envoy-7f9c/default', 'Ünïcødé 日本語 ✓', 'cluster: "default/app/8080" not found 🚫']) {
      expect(hasUnsafeCharacters(text)).toBe(false);
      expect(displaySafe(text)).toBe(text);
    }
  });

  it('property: the result has no unsafe character, is idempotent, and keeps every safe character in place', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const shown = displaySafe(text);
        expect(hasUnsafeCharacters(shown)).toBe(false);
        expect(displaySafe(shown)).toBe(shown);
        const before = [...text];
        const after = [...shown];
        expect(after).toHaveLength(before.length);
        after.forEach((char, index) => {
          if (char !== R) expect(char).toBe(before[index]);
        });
      }),
      { numRuns: 500 },
    );
  });
});

describe('checkNodeFields', () => {
  const base: NodeFields = { id: 'envoy-0', cluster: 'ingress', metadata: {}, metadataDepth: 1, labels: {} };

  it('accepts an ordinary node', () => {
    expect(checkNodeFields(base)).toBeUndefined();
  });

  it.each<[string, Partial<NodeFields>, RegExp]>([
    ['an empty id', { id: '' }, /^node\.id must be a non-empty string$/],
    ['an id past its bound', { id: 'e'.repeat(NODE_LIMITS.idBytes + 1) }, /^node\.id is 257 bytes of UTF-8; at most 256$/],
    ['an id whose UTF-8 is past its bound (non-ASCII)', { id: 'é'.repeat(129) }, /^node\.id is 258 bytes/],
    ['an id with a control character', { id: 'envoy\n0' }, /^node\.id holds the control or format character U\+000A at index 5$/],
    ['a long cluster (the reported 1,103 characters)', { cluster: 'c'.repeat(1103) }, /^node\.cluster is 1103 bytes of UTF-8; at most 256$/],
    ['a locality with a bidi override', { labels: { 'node.locality.zone': 'z\u202E' } }, /^node\.locality\.zone holds the control or format character U\+202E/],
    ['a long user agent', { labels: { 'node.user_agent_name': 'u'.repeat(200) } }, /^node\.user_agent_name is 200 bytes/],
    ['metadata nested too deep', { metadataDepth: NODE_LIMITS.metadataDepth + 1 }, /^node\.metadata nests 9 levels deep; at most 8$/],
    ['the one id the table cannot hold as a map key', { id: '__proto__' }, /^node\.id is "__proto__", which the table cannot hold as a map key/],
    ['metadata too large', { metadata: { blob: 'x'.repeat(NODE_LIMITS.metadataJsonBytes) } }, /^node\.metadata is \d+ bytes as JSON; at most 8192$/],
  ])('refuses %s, naming the field', (_what, change, expected) => {
    expect(checkNodeFields({ ...base, ...change })).toMatch(expected);
  });

  it('bounds the group key the same way', () => {
    expect(checkGroupKey('g'.repeat(NODE_LIMITS.groupBytes), 'node.cluster')).toBeUndefined();
    expect(checkGroupKey('g'.repeat(NODE_LIMITS.groupBytes + 1), 'node.metadata.group')).toMatch(/^the node group \(node\.metadata\.group\) is 257 bytes/);
    expect(checkGroupKey('__proto__', 'node.cluster')).toMatch(/^the node group \(node\.cluster\) is "__proto__"/);
  });

  it('accepts ids that name properties every object inherits (the aggregate reads members as own properties)', () => {
    for (const id of ['constructor', 'toString', 'hasOwnProperty', 'valueOf']) expect(checkNodeFields({ ...base, id })).toBeUndefined();
  });
});
