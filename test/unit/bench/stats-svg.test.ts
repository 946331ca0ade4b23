import { percentile, round, summarize } from '../../../bench/support/stats';
import { escapeXml, niceCeiling, renderLineChart } from '../../../bench/support/svg';

describe('bench stats', () => {
  it('nearest-rank percentiles', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 99)).toBe(99);
    expect(percentile(sorted, 100)).toBe(100);
    expect(percentile([], 50)).toBeNaN();
    expect(percentile([7], 99)).toBe(7);
  });

  it('summarize does not reorder its input', () => {
    const samples = [30, 10, 20];
    expect(summarize(samples)).toEqual({ count: 3, p50: 20, p99: 30, max: 30 });
    expect(samples).toEqual([30, 10, 20]);
    expect(round(1.256, 2)).toBe(1.26);
  });
});

describe('SVG line chart', () => {
  it('nice ceilings', () => {
    expect(niceCeiling(0)).toBe(1);
    expect(niceCeiling(3)).toBe(5);
    expect(niceCeiling(250)).toBe(500);
    expect(niceCeiling(1000)).toBe(1000);
    expect(niceCeiling(1001)).toBe(2000);
  });

  it('draws one polyline per unbroken series, breaks at gaps, escapes text', () => {
    const svg = renderLineChart({
      title: 'A & B',
      xLabel: 'x',
      yLabel: 'y',
      xLabels: ['1', '2', '3', '4'],
      series: [
        { name: 'full <ours>', values: [1, 2, 3, 4] },
        { name: 'gappy', values: [1, undefined, 3, Number.NaN], dashed: true },
      ],
      target: { value: 2, label: 'target' },
    });
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trim().endsWith('</svg>')).toBe(true);
    expect(svg.match(/<polyline/g)).toHaveLength(1);
    expect(svg.match(/<circle/g)).toHaveLength(6);
    expect(svg).toContain('A &amp; B');
    expect(svg).toContain('full &lt;ours&gt;');
    expect(svg).not.toContain('NaN');
    expect(escapeXml('"<&>"')).toBe('&quot;&lt;&amp;&gt;&quot;');
  });
});
