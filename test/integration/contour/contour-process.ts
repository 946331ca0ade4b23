// The real, unmodified Contour installed by scripts/contour-install.mjs (`npm run contour:install`):
// where its binary and the CRDs it ships are (.cache/peers/contour.json, pointing into the Go
// module cache), and `contour serve` as a child process against a kubeconfig. A missing install is
// an error that says how to install it, never a skipped test. The implementation lives with the
// local system (infra/local/system/contour.ts), which runs Contour for `npm start -- --control-plane
// contour` too.
import { startServingContourProcess, type ContourProcess } from '../../../infra/local/system/contour';

export { contourInstall, freePort, yamlObjects, type ContourInstall, type ContourProcess } from '../../../infra/local/system/contour';

/** `contour serve` on a free xDS port, resolved once it serves xDS (a port taken meanwhile is retried). */
export function startContour(binary: string, kubeconfig: string, extraArgs: string[] = [], options: { hostname?: string } = {}): Promise<ContourProcess> {
  return startServingContourProcess({ binary, kubeconfig, extraArgs, portChoice: 'free', ...options });
}
