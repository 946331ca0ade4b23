// Contour's Lease holder is controller-runtime's `<hostname>_<uuid>` (the hostname is the pod name;
// the UUID is new with every process), which no flag can name ahead: `--leader-targets` and
// `--leader-target-template` match such a holder by its pod name (xds-gateway/tracking/leader-follower.ts).
// through-gateway.test.ts shows the real holder has this form.
import { holderHostname, targetForHolder } from '../../../xds-gateway/tracking/leader-follower';

const UUID = '080e43bd-583a-46ef-977f-9bc496ed0e2b';

describe('Lease holders written by controller-runtime (Contour)', () => {
  test.each([
    ['pod name and uuid', `contour-7d9f8-abcde_${UUID}`, 'contour-7d9f8-abcde'],
    ['an underscore in the name stays', `a_b_${UUID}`, 'a_b'],
    ['no uuid', 'contour-1', undefined],
    ['not a uuid', 'contour-1_abc', undefined],
    ['uppercase is not what controller-runtime writes', `contour-1_${UUID.toUpperCase()}`, undefined],
  ])('%s', (_name, holder, expected) => {
    expect(holderHostname(holder)).toBe(expected);
  });

  test.each([
    ['by pod name', { targets: { 'contour-1': '127.0.0.1:8001', 'contour-2': '127.0.0.1:8002' } }, '127.0.0.1:8002'],
    ['the exact holder first', { targets: { [`contour-2_${UUID}`]: 'exact:1', 'contour-2': 'pod:1' } }, 'exact:1'],
    ['template gets the pod name', { template: '{holder}.contour.projectcontour:8001' }, 'contour-2.contour.projectcontour:8001'],
    ['annotation still first', { annotation: 'addr', targets: { 'contour-2': 'pod:1' } }, 'advertised:1'],
    ['an unknown pod', { targets: { 'contour-1': '127.0.0.1:8001' } }, undefined],
  ])('%s', (name, mapping, expected) => {
    expect(targetForHolder(`contour-2_${UUID}`, mapping, name === 'annotation still first' ? { addr: 'advertised:1' } : {})).toBe(expected);
  });
});
