// `xds-programmed wait` (the real CLI, as a child process through its bin shim) against a scripted
// query API: it returns at once with exit 7 when the awaited generation's condition says Rejected or
// Invalid (not for an older generation's verdict), waits out the timeout with --no-fail-fast, and
// retries throttled (429) answers with backoff inside its timeout instead of exiting 2.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isTransient, MAX_BACKOFF_MS, transientBackoffMs } from '../../../common/cli/wait';
import { QueryApiError } from '../../../common/cli/query-client';
import { cli } from '../system/helpers';

jest.setTimeout(60_000);

type Answer = { status: number; body: unknown };

function view(generation: number, condition: Record<string, unknown> | null, live: Record<string, unknown> = {}): unknown {
  return {
    object: { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' },
    generation,
    condition,
    programmedAt: null,
    live: { state: 'Pending', programmed: 3, total: 4, blockers: [], blockersNotListed: 0, fleetTruncated: false, ...live },
  };
}

const nack = { nodeId: 'envoy-2', reason: 'nacked', nacks: [{ type: 'RDS', message: 'route: unknown cluster "app-canary"' }] };
const rejected = (observedGeneration: number) => ({
  type: 'EnvoyProgrammed',
  status: 'False',
  reason: 'Rejected',
  observedGeneration,
  message: `3/4 Envoys programmed at generation ${observedGeneration}; envoy-2 rejected RDS: route: unknown cluster "app-canary"`,
});
const programmed = { type: 'EnvoyProgrammed', status: 'True', reason: 'Programmed', observedGeneration: 2, message: '4/4 Envoys programmed at generation 2' };
const throttled: Answer = { status: 429, body: { error: { code: 'TooManyRequests', message: 'Rate Exceeded.' } } };

describe('xds-programmed wait: terminal verdicts and throttling', () => {
  let server: Server;
  let url: string;
  /** Per object name: the answers to give in turn (the last one repeats). */
  const scripts = new Map<string, Answer[]>();
  const requests = new Map<string, number[]>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      const name = decodeURIComponent((req.url ?? '').split('?')[0]?.split('/').pop() ?? '');
      const times = requests.get(name) ?? [];
      times.push(Date.now());
      requests.set(name, times);
      const script = scripts.get(name) ?? [{ status: 404, body: { error: { code: 'ObjectNotFound', message: 'no such object' } } }];
      const answer = script.length > 1 ? (script.shift() as Answer) : (script[0] as Answer);
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  const wait = async (name: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string; ms: number }> => {
    const started = Date.now();
    const result = await cli(['wait', `httpproxy/${name}`, ...args], { XDS_PROGRAMMED_URL: url, XDS_PROGRAMMED_TOKEN: 'scripted-token-0123456789' });
    return { ...result, ms: Date.now() - started };
  };

  it('returns 7 at once when the awaited generation is Rejected, quoting the Envoy', async () => {
    scripts.set('rejected', [{ status: 200, body: view(2, rejected(2), { state: 'Rejected', blockers: [nack] }) }]);
    const result = await wait('rejected', ['--timeout', '20s']);
    expect(result.code).toBe(7);
    expect(result.stderr).toContain('generation 2 is Rejected; waiting cannot change that (--no-fail-fast keeps waiting)');
    expect(result.stderr).toContain('envoy-2 rejected RDS: route: unknown cluster "app-canary"');
    expect(result.stderr).toContain('envoy-2: NACKED RDS');
    // One answer was enough: no polling until the timeout (it took 24.5 s for --timeout 20s before).
    expect(requests.get('rejected')).toHaveLength(1);
    expect(result.ms).toBeLessThan(10_000);
    process.stdout.write(`wait on a Rejected generation: exit ${result.code} after ${result.ms} ms (--timeout 20s)\n`);
  });

  it('treats reason Invalid as terminal too', async () => {
    scripts.set('invalid', [{ status: 200, body: view(2, { type: 'EnvoyProgrammed', status: 'False', reason: 'Invalid', observedGeneration: 2, message: 'generation 2 is invalid' }) }]);
    const result = await wait('invalid', ['--timeout', '20s']);
    expect(result.code).toBe(7);
    expect(result.stderr).toContain('generation 2 is Invalid');
  });

  it('does not fail fast on an older generation\'s Rejected: that verdict is not about the awaited one', async () => {
    scripts.set('older', [{ status: 200, body: view(2, rejected(1)) }]);
    const result = await wait('older', ['--timeout', '1500ms', '--poll', '200ms']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('timed out after 2s');
  });

  it('--no-fail-fast keeps waiting for the timeout, then exits 3 (an Envoy NACKed)', async () => {
    scripts.set('patient', [{ status: 200, body: view(2, rejected(2), { state: 'Rejected', blockers: [nack] }) }]);
    const result = await wait('patient', ['--timeout', '2s', '--poll', '200ms', '--no-fail-fast']);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('timed out after 2s');
    expect((requests.get('patient') ?? []).length).toBeGreaterThan(3);
  });

  it('retries 429 with growing pauses and returns 0 once the generation is programmed', async () => {
    scripts.set('busy', [throttled, throttled, throttled, { status: 200, body: view(2, programmed, { state: 'Programmed', programmed: 4 }) }]);
    const result = await wait('busy', ['--timeout', '30s', '--poll', '200ms']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('condition met: EnvoyProgrammed=True at generation 2');
    expect(result.stderr).toContain('query API throttled (HTTP 429: Rate Exceeded.); retrying with backoff');
    const times = requests.get('busy') ?? [];
    expect(times).toHaveLength(4);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    // Each pause is at least half of the poll interval doubled per failure: 100, 200, 400 ms at least.
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(100 * 2 ** i - 20));
    process.stdout.write(`429 ×3 then True: pauses ${gaps.join(', ')} ms, exit ${result.code}\n`);
  });

  it('throttled until the deadline: exits 4 (unavailable) after the timeout, not 2, with fewer requests than polling', async () => {
    scripts.set('throttled', [throttled]);
    const result = await wait('throttled', ['--timeout', '3s', '--poll', '200ms']);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('timed out after 3s: HTTPProxy.projectcontour.io default/throttled: the query API never answered (last: Rate Exceeded.)');
    // Said once, not once per attempt.
    expect(result.stderr.match(/throttled \(HTTP 429/g)).toHaveLength(1);
    expect(result.ms).toBeGreaterThanOrEqual(3000);
    // Polling every 200 ms would have asked ~15 times; backoff asks far less.
    expect((requests.get('throttled') ?? []).length).toBeLessThanOrEqual(8);
  });
});

describe('wait\'s retry rule', () => {
  it('429, 5xx and no answer are transient; other 4xx are not', () => {
    expect([429, 500, 503, undefined].map((status) => isTransient(new QueryApiError(status, 'x', 'x')))).toEqual([true, true, true, true]);
    expect([400, 401, 403, 404].map((status) => isTransient(new QueryApiError(status, 'x', 'x')))).toEqual([false, false, false, false]);
    expect(isTransient(new Error('x'))).toBe(false);
  });

  it('pauses between half and all of the poll interval doubled per failure, at most 10 s', () => {
    for (let failures = 1; failures <= 30; failures++) {
      const cap = Math.min(MAX_BACKOFF_MS, 500 * 2 ** (failures - 1));
      expect(transientBackoffMs(failures, 500, () => 0)).toBe(cap / 2);
      expect(transientBackoffMs(failures, 500, () => 0.999999)).toBeLessThanOrEqual(cap);
    }
  });
});
