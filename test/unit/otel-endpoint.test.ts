// The address the OpenTelemetry warning names when no span got out: the one the exporter used.
import { expect, test } from 'bun:test';
import { traceEndpoint } from '../../src/telemetry/sdk.ts';

test('the traces variable, else the base variable with /v1/traces, else the default, each said to be so', () => {
  expect(traceEndpoint({})).toBe('http://localhost:4318/v1/traces (the default; set OTEL_EXPORTER_OTLP_ENDPOINT to your collector)');
  expect(traceEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toBe('http://collector:4318/v1/traces (OTEL_EXPORTER_OTLP_ENDPOINT)');
  expect(traceEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b/traces' })).toBe('http://b/traces (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)');
  expect(traceEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toStartWith('http://localhost:4318/v1/traces (the default');
});
