// The OpenTelemetry SDK behind conch's own traces. open.ts imports this file only when tracing is
// on, so a run without it loads none of the SDK. The exporter reads the standard variables itself
// (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION); the resource reads
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. Nothing is registered globally: an embedder's
// own OpenTelemetry setup is left as it was.
import { context } from '@opentelemetry/api';
import { BatchSpanProcessor, TracerProvider, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace';
import { defaultResource, detectResources, resourceAttributesEnvDetector, resourceFromAttributes, serviceNameEnvDetector } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import pkg from '../../package.json' with { type: 'json' };
import { runSpans, type Tracing } from './spans.ts';

/** The longest the end of a run waits for its spans to go out: export never holds the exit longer. */
export const FLUSH_MS = 2_000;

type Env = Record<string, string | undefined>;

/** The SDK's exporter for OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL (default http/protobuf, as the spec says). */
async function exporterFor(env: Env): Promise<SpanExporter> {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  if (protocol === 'http/protobuf') return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
  throw new Error(
    `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: conch exports traces over OTLP/HTTP only; set it to http/protobuf or http/json (and the endpoint to the collector's HTTP port, usually 4318)`,
  );
}

/**
 * Where the exporter sends, as the spec derives it, for the warning when nothing arrived: with
 * `--otel` and no variable, a new user has no other way to learn that the default is localhost:4318.
 */
export function traceEndpoint(env: Env): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return `${traces} (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)`;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (base) return `${base.replace(/\/+$/, '')}/v1/traces (OTEL_EXPORTER_OTLP_ENDPOINT)`;
  return 'http://localhost:4318/v1/traces (the default; set OTEL_EXPORTER_OTLP_ENDPOINT to your collector)';
}

/** The exporter, noting why an export failed so the user hears of it once the run is over. */
function noting(exporter: SpanExporter, problems: Set<string>, endpoint: string): SpanExporter {
  return {
    export(spans: ReadableSpan[], done) {
      exporter.export(spans, (result) => {
        // ExportResultCode.SUCCESS is 0 (from @opentelemetry/core, which conch does not import itself).
        if (result.code !== 0) problems.add(`${spans.length} ${spans.length === 1 ? 'span' : 'spans'} could not be exported to ${endpoint}: ${result.error?.message ?? 'the collector refused them'}`);
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

export async function openSdk(env: Env): Promise<Tracing> {
  const problems = new Set<string>();
  const endpoint = traceEndpoint(env);
  const exporter = noting(await exporterFor(env), problems, endpoint);
  // Only these detectors: the process detector would put the command line, and so the task, in every span.
  const detected = detectResources({ detectors: [resourceAttributesEnvDetector, serviceNameEnvDetector] });
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'conch', [ATTR_SERVICE_VERSION]: pkg.version }))
    .merge(detected);
  const provider = new TracerProvider({ resource, spanProcessors: [new BatchSpanProcessor({ exporter })] });
  const tracer = provider.getTracer('conch', pkg.version);
  return {
    run: () => runSpans(tracer, context.active()),
    // A run's spans start on their way as it ends (an editor's session runs many); close waits for them.
    runEnded: () => void provider.forceFlush({ timeoutMillis: FLUSH_MS }).catch(() => {}),
    async close() {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), FLUSH_MS)));
      const done = provider.shutdown().then(
        () => 'done' as const,
        (error) => {
          problems.add(`the trace exporter failed to shut down: ${error instanceof Error ? error.message : String(error)}`);
          return 'done' as const;
        },
      );
      if ((await Promise.race([done, late])) === 'late') problems.add(`the spans could not be sent to ${endpoint} within ${FLUSH_MS} ms and were dropped: is a collector listening there?`);
      clearTimeout(timer);
      return [...problems].map((p) => `OpenTelemetry: ${p}`);
    },
  };
}
