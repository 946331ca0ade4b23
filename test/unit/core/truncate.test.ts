import fc from 'fast-check';
import { truncateUtf8, utf8Length } from '../../../common/core';

describe('truncateUtf8', () => {
  it.each([
    ['short', 10, 'short'],
    ['', 10, ''],
    ['exactly10!', 10, 'exactly10!'],
  ])('keeps %j within %d bytes unchanged', (text, max, expected) => {
    expect(truncateUtf8(text, max)).toBe(expected);
  });

  it.each([
    ['a'.repeat(5000), 4096],
    ['é'.repeat(3000), 100],
    ['😀'.repeat(2000), 64],
    ['日本語'.repeat(1000), 50],
  ])('cuts %#: within the limit, marked, a prefix on a code point boundary', (text, max) => {
    const out = truncateUtf8(text, max);
    expect(utf8Length(out)).toBeLessThanOrEqual(max);
    expect(out).toContain(`[truncated, ${utf8Length(text)} bytes]`);
    const kept = out.slice(0, out.indexOf('...[truncated'));
    expect(text.startsWith(kept)).toBe(true);
    expect(kept).not.toContain('\uFFFD');
  });

  it('always fits the limit and is a prefix of the original when cut (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 400 }), fc.integer({ min: 40, max: 600 }), (text, max) => {
        const out = truncateUtf8(text, max);
        expect(utf8Length(out)).toBeLessThanOrEqual(max);
        if (utf8Length(text) <= max) expect(out).toBe(text);
        else expect(text.startsWith(out.slice(0, out.lastIndexOf('...[truncated')))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
