import fc from 'fast-check';
import { compareVersions, encodeVersion, isValidLineage, lineageParts, makeLineage, parseVersion } from '../../../common/core';

describe('parseVersion', () => {
  it.each([
    ['xp1:gw-a.boot1.edge:0', { lineage: 'gw-a.boot1.edge', seq: 0 }],
    ['xp1:gw-a.boot1.edge:42', { lineage: 'gw-a.boot1.edge', seq: 42 }],
    ['xp1:a.b.c:9007199254740991', { lineage: 'a.b.c', seq: 9007199254740991 }],
  ])('parses %s', (text, expected) => {
    expect(parseVersion(text)).toEqual({ ok: true, value: expected });
  });

  it.each([
    [''],
    ['42'],
    ['3f1b8c2e-5e5a-4c4f-9d1e-2f7f0d1c2b3a'], // a Contour UUID version
    ['xp1:gw-a.boot1.edge'],
    ['xp1:gw-a.boot1.edge:'],
    ['xp1:gw-a.boot1.edge:01'], // leading zero: not the canonical spelling
    ['xp1:gw-a.boot1.edge:-1'],
    ['xp1:gw-a.boot1.edge:1.5'],
    ['xp1:gw-a.boot1.edge:9007199254740992'], // beyond MAX_SAFE_INTEGER
    ['xp1:gw-a.boot1.edge:99999999999999999'],
    ['xp1:GW.boot.edge:1'], // upper case
    ['xp1:gw-a.boot1:1'], // two parts
    ['xp1:gw-a.boot1.edge.x:1'], // four parts
    ['xp2:gw-a.boot1.edge:1'],
    [' xp1:gw-a.boot1.edge:1'],
    ['xp1:gw-a.boot1.edge:1 '],
    ['xp1:gw_a.boot1.edge:1'],
    [`xp1:${'a'.repeat(64)}.b.c:1`],
  ])('rejects %j without throwing', (text) => {
    const parsed = parseVersion(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error.length).toBeGreaterThan(0);
  });

  const lineagePart = fc.stringMatching(/^[a-z0-9-]{1,63}$/);
  const lineage = fc.tuple(lineagePart, lineagePart, lineagePart).map(([a, b, c]) => `${a}.${b}.${c}`);
  const seq = fc.maxSafeNat();

  it('round-trips encodeVersion', () => {
    fc.assert(
      fc.property(lineage, seq, (l, s) => {
        expect(parseVersion(encodeVersion({ lineage: l, seq: s }))).toEqual({ ok: true, value: { lineage: l, seq: s } });
      }),
      { numRuns: 1000 },
    );
  });

  it('never throws on arbitrary strings, and what it accepts re-encodes to the same text', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.tuple(lineage, fc.string()).map(([l, s]) => `xp1:${l}:${s}`)), (text) => {
        const parsed = parseVersion(text);
        if (parsed.ok) expect(encodeVersion(parsed.value)).toBe(text);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('encodeVersion', () => {
  it.each([
    [{ lineage: 'bad', seq: 1 }],
    [{ lineage: 'a.b.c', seq: -1 }],
    [{ lineage: 'a.b.c', seq: 1.5 }],
    [{ lineage: 'a.b.c', seq: Number.MAX_SAFE_INTEGER + 1 }],
  ])('refuses invalid input %j (a programming error)', (version) => {
    expect(() => encodeVersion(version)).toThrow();
  });
});

describe('compareVersions', () => {
  it.each([
    [{ lineage: 'a.b.c', seq: 1 }, { lineage: 'a.b.c', seq: 2 }, -1],
    [{ lineage: 'a.b.c', seq: 2 }, { lineage: 'a.b.c', seq: 2 }, 0],
    [{ lineage: 'a.b.c', seq: 3 }, { lineage: 'a.b.c', seq: 2 }, 1],
    [{ lineage: 'a.b.c', seq: 1 }, { lineage: 'a.b.d', seq: 2 }, 'incomparable'],
    [{ lineage: 'a.b.c', seq: 2 }, { lineage: 'a.b2.c', seq: 2 }, 'incomparable'],
  ] as const)('compare(%j, %j) = %p', (a, b, expected) => {
    expect(compareVersions(a, b)).toBe(expected);
  });
});

describe('makeLineage', () => {
  it.each([
    ['gw-0', 'k3x9', 'edge', true],
    ['GW', 'k3x9', 'edge', false],
    ['gw', '', 'edge', false],
    ['gw', 'b', 'a.b', false],
    ['gw', 'b', 'x'.repeat(64), false],
  ])('makeLineage(%s, %s, %s) ok=%p', (instance, boot, group, ok) => {
    const made = makeLineage(instance, boot, group);
    expect(made.ok).toBe(ok);
    if (made.ok) expect(isValidLineage(made.value)).toBe(true);
    // lineageParts is its inverse.
    if (made.ok) expect(lineageParts(made.value)).toEqual({ instanceId: instance, bootId: boot, groupId: group });
  });

  it('lineageParts reads no parts from what is not a lineage', () => {
    expect([lineageParts('gw.boot'), lineageParts('GW.b.g'), lineageParts('a.b.c.d')]).toEqual([undefined, undefined, undefined]);
  });
});
