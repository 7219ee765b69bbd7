// --output-schema FILE: the schema is read and checked before anything else of the run starts (no
// model call, no plugin), so a missing file, bad JSON or a schema that is not one is a setup error
// that names the file and what is wrong.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, SetupError } from '../core/errors.ts';
import { parseJsonText } from '../config/json-text.ts';
import { schemaProblems, type OutputSchema } from '../agent/output.ts';

export function loadOutputSchema(file: string, cwd: string): OutputSchema {
  let raw: string;
  try {
    raw = readFileSync(resolve(cwd, file), 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (error as Error).message;
    // The path typed is wrong: a flag's problem (setup-error.ts isFlagProblem), not the file's.
    throw new ConfigError(`--output-schema ${file}: cannot read the schema (${why}). Give the path of a JSON Schema file.`, undefined, '--output-schema');
  }
  const parsed = parseJsonText(raw);
  if (!parsed.ok) throw new SetupError(`--output-schema ${file}: ${parsed.message}. The file must hold one JSON Schema.`);
  const problems = schemaProblems(parsed.value);
  if (problems.length) {
    throw new SetupError(`--output-schema ${file}: not a valid JSON Schema: ${problems.join('; ')}`);
  }
  return parsed.value as OutputSchema;
}
