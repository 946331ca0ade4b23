import fc from 'fast-check';
import { classifyRequest, recordAnswered, recordSent, type RequestFacts, type SentRecord } from '../../../common/core';
import { RDS } from './fixtures';

const record: SentRecord = { sent: [{ nonce: 'n1', version: 'xp1:a.b.c:1' }, { nonce: 'n2', version: 'xp1:a.b.c:2' }] };

function sotw(responseNonce: string, versionInfo: string, errorDetail?: RequestFacts['errorDetail']): RequestFacts {
  return { protocol: 'sotw', typeUrl: RDS, responseNonce, versionInfo, errorDetail };
}
function delta(responseNonce: string, errorDetail?: RequestFacts['errorDetail']): RequestFacts {
  return { protocol: 'delta', typeUrl: RDS, responseNonce, versionInfo: '', errorDetail };
}

describe('classifyRequest', () => {
  it.each<[string, RequestFacts, SentRecord | undefined, ReturnType<typeof classifyRequest>]>([
    // Empty response_nonce: initial request, whatever else it carries.
    ['SotW first request', sotw('', ''), undefined, { kind: 'initial', versionInfo: '' }],
    ['SotW reconnect with the version it runs', sotw('', 'xp1:a.b.c:7'), undefined, { kind: 'initial', versionInfo: 'xp1:a.b.c:7' }],
    ['SotW empty nonce on a stream with responses', sotw('', 'xp1:a.b.c:2'), record, { kind: 'initial', versionInfo: 'xp1:a.b.c:2' }],
    ['empty nonce with error_detail is not a NACK of anything we sent', sotw('', '', { message: 'x' }), record, { kind: 'initial', versionInfo: '' }],
    ['Delta first request', delta(''), undefined, { kind: 'initial', versionInfo: '' }],
    ['Delta ackless subscription change after responses', delta(''), record, { kind: 'update', nonce: '', reason: 'acklessUpdate' }],
    // Latest nonce: ACK or NACK of the response we sent under it.
    ['SotW ACK of latest', sotw('n2', 'xp1:a.b.c:2'), record, { kind: 'ack', nonce: 'n2', version: 'xp1:a.b.c:2' }],
    // After a NACK, Envoy's next request (e.g. a resource_names change) echoes the nonce without
    // error_detail and with the last version it accepted: not an ACK.
    ['SotW latest nonce with the previous version and no error_detail is not an ACK', sotw('n2', 'xp1:a.b.c:1'), record, { kind: 'update', nonce: 'n2', reason: 'versionNotAccepted' }],
    ['SotW latest nonce with an empty version is not an ACK', sotw('n2', ''), record, { kind: 'update', nonce: 'n2', reason: 'versionNotAccepted' }],
    ['SotW ACK with null error_detail', sotw('n2', 'xp1:a.b.c:2', null), record, { kind: 'ack', nonce: 'n2', version: 'xp1:a.b.c:2' }],
    ['SotW NACK: version is the rejected one, version_info the last good', sotw('n2', 'xp1:a.b.c:1', { code: 3, message: 'bad route' }), record,
      { kind: 'nack', nonce: 'n2', version: 'xp1:a.b.c:2', message: 'bad route', lastAcceptedVersionInfo: 'xp1:a.b.c:1' }],
    ['SotW NACK whose version_info equals the sent version is still a NACK', sotw('n2', 'xp1:a.b.c:2', { message: 'no' }), record,
      { kind: 'nack', nonce: 'n2', version: 'xp1:a.b.c:2', message: 'no', lastAcceptedVersionInfo: 'xp1:a.b.c:2' }],
    ['NACK with empty error_detail is a NACK', sotw('n2', 'xp1:a.b.c:1', {}), record,
      { kind: 'nack', nonce: 'n2', version: 'xp1:a.b.c:2', message: '', lastAcceptedVersionInfo: 'xp1:a.b.c:1' }],
    ['Delta ACK', delta('n2'), record, { kind: 'ack', nonce: 'n2', version: 'xp1:a.b.c:2' }],
    ['Delta NACK', delta('n2', { message: 'bad cluster' }), record,
      { kind: 'nack', nonce: 'n2', version: 'xp1:a.b.c:2', message: 'bad cluster', lastAcceptedVersionInfo: '' }],
    // Older nonce: stale; never-sent nonce: unknown.
    ['SotW stale ACK', sotw('n1', 'xp1:a.b.c:1'), record, { kind: 'stale', nonce: 'n1' }],
    ['SotW stale NACK is not a NACK', sotw('n1', '', { message: 'old' }), record, { kind: 'stale', nonce: 'n1' }],
    ['Delta stale', delta('n1'), record, { kind: 'stale', nonce: 'n1' }],
    ['unknown nonce', sotw('n9', 'xp1:a.b.c:2'), record, { kind: 'unknownNonce', nonce: 'n9' }],
    ['nonce before anything was sent', sotw('n1', ''), undefined, { kind: 'unknownNonce', nonce: 'n1' }],
    ['nonce with an empty record', delta('n1'), { sent: [] }, { kind: 'unknownNonce', nonce: 'n1' }],
  ])('%s', (_name, request, sent, expected) => {
    expect(classifyRequest(request, sent)).toEqual(expected);
  });

  it('never classifies a request with error_detail as an ACK (property)', () => {
    const nonce = fc.stringMatching(/^n[0-9]{1,2}$/);
    fc.assert(
      fc.property(
        fc.array(fc.record({ nonce, version: fc.string() }), { maxLength: 6 }),
        fc.oneof(nonce, fc.constant('')),
        fc.string(),
        fc.constantFrom<'sotw' | 'delta'>('sotw', 'delta'),
        fc.record({ message: fc.option(fc.string(), { nil: undefined }), code: fc.option(fc.integer(), { nil: undefined }) }),
        (sent, responseNonce, versionInfo, protocol, errorDetail) => {
          const result = classifyRequest({ protocol, typeUrl: RDS, responseNonce, versionInfo, errorDetail }, { sent });
          expect(result.kind).not.toBe('ack');
          const latest = sent[sent.length - 1];
          if (responseNonce !== '' && latest?.nonce === responseNonce) {
            expect(result).toMatchObject({ kind: 'nack', version: latest.version });
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('an ACK is always of the latest response and, in SotW, echoes its version (property)', () => {
    const nonce = fc.constantFrom('n1', 'n2', 'n3', '');
    const version = fc.constantFrom('xp1:a.b.c:1', 'xp1:a.b.c:2', '', 'uuid');
    fc.assert(
      fc.property(
        fc.array(fc.record({ nonce: fc.constantFrom('n1', 'n2', 'n3'), version }), { maxLength: 4 }),
        nonce,
        version,
        fc.constantFrom<'sotw' | 'delta'>('sotw', 'delta'),
        (sent, responseNonce, versionInfo, protocol) => {
          const result = classifyRequest({ protocol, typeUrl: RDS, responseNonce, versionInfo }, { sent });
          const latest = sent[sent.length - 1];
          if (result.kind === 'ack') {
            expect(latest?.nonce).toBe(responseNonce);
            expect(result.version).toBe(latest?.version);
            if (protocol === 'sotw') expect(versionInfo).toBe(latest?.version);
          }
          if (result.kind === 'initial') expect(protocol === 'sotw' || sent.length === 0).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('recordSent keeps only the latest few, latest last', () => {
    let sent: SentRecord | undefined;
    for (let i = 1; i <= 20; i++) sent = recordSent(sent, { nonce: `n${i}`, version: `v${i}` }, 4);
    expect(sent?.sent.map((r) => r.nonce)).toEqual(['n17', 'n18', 'n19', 'n20']);
    expect(classifyRequest(sotw('n20', 'v20'), sent)).toEqual({ kind: 'ack', nonce: 'n20', version: 'v20' });
    expect(classifyRequest(sotw('n18', 'v18'), sent).kind).toBe('stale');
    expect(classifyRequest(sotw('n3', 'v3'), sent).kind).toBe('unknownNonce');
  });
});

describe('a copy of an answer already recorded (rule 4)', () => {
  const answered = recordAnswered(record, 'n2');
  it.each<[string, RequestFacts]>([
    ['the same ACK again', sotw('n2', 'xp1:a.b.c:2')],
    ['the same NACK again', sotw('n2', 'xp1:a.b.c:1', { code: 3, message: 'bad' })],
    ['a Delta ACK again', delta('n2')],
    ['a Delta NACK again', delta('n2', { message: 'bad' })],
  ])('%s acknowledges nothing new', (_name, facts) => {
    expect(classifyRequest(facts, answered)).toEqual({ kind: 'update', nonce: 'n2', reason: 'alreadyAnswered' });
  });

  it('the first answer of a response sent since is an answer again', () => {
    const resent = recordSent(answered, { nonce: 'n3', version: 'xp1:a.b.c:2' });
    expect(resent.answered).toBe('n2');
    expect(classifyRequest(sotw('n3', 'xp1:a.b.c:2'), resent)).toEqual({ kind: 'ack', nonce: 'n3', version: 'xp1:a.b.c:2' });
    expect(classifyRequest(sotw('n3', 'xp1:a.b.c:1', { message: 'again' }), resent)).toMatchObject({ kind: 'nack', nonce: 'n3', version: 'xp1:a.b.c:2', message: 'again' });
  });

  it('an older nonce is still stale, and nothing answered yet is an answer', () => {
    expect(classifyRequest(sotw('n1', 'xp1:a.b.c:1'), answered)).toEqual({ kind: 'stale', nonce: 'n1' });
    expect(classifyRequest(sotw('n2', 'xp1:a.b.c:2'), record)).toEqual({ kind: 'ack', nonce: 'n2', version: 'xp1:a.b.c:2' });
  });
});
