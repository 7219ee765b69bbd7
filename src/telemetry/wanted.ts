// Whether a run exports OpenTelemetry traces, decided from the flag and the standard OTEL_*
// variables without loading any OpenTelemetry code: a run without tracing never pays for it.
type Env = Record<string, string | undefined>;

export function otelWanted(flag: boolean | undefined, env: Env): boolean {
  // The SDK's own off switches win over everything, --otel included (as they do for any OTel SDK).
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.split(',').some((name) => name.trim() === 'none')) return false;
  if (flag) return true;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}
