// The clock the recorder times its store calls with (RecorderMetrics.writeLatency): monotonic, in
// seconds, independent of the injected Clock (which tests move by hand).

export function performanceSeconds(): number {
  return performance.now() / 1000;
}
