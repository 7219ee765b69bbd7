// The starter plugin `conch tools new NAME` writes. It must load as written, and its commented image
// example type-check and run once uncommented: tests do both.

export function starterPlugin(name: string): string {
  return `// A conch plugin: this file is a tool the model can call, loaded at every start.
// No build step and no node_modules needed: 'conch' and 'typebox' are provided by conch itself.
// Check that it loads with \`conch tools\`. The tsconfig.json beside it gives editors the types.
import { defineTool, Type } from 'conch';

export default defineTool({
  // Lowercase letters, digits and _ ; must not collide with another tool.
  name: '${name}',
  // The model reads this to decide when to call the tool: say what it does and when to use it.
  description: 'Describe what ${name} does and when the model should use it.',
  // The arguments, as a TypeBox schema (or a plain JSON Schema object). Unknown keys are rejected
  // and the arguments are validated before execute runs.
  parameters: Type.Object({
    text: Type.String({ description: 'What to work on' }),
    count: Type.Optional(Type.Integer({ minimum: 1, description: 'How many times (default 1)' })),
  }),
  // args is typed from the schema. ctx gives:
  //   ctx.cwd                            the workspace root
  //   ctx.signal                         aborted on cancel or deadline: pass it on, or check it
  //   await ctx.workspace.resolve(p, 'read')  async (await it): the canonical path if the policy
  //                                      lets you read p ('write' to write it), else a PolicyError
  //   ctx.exec(command, { timeoutMs })   a shell command under the same sandbox and limits as bash
  //   ctx.update('…')                    progress shown to the user
  // Return a string, any JSON value, or { content: [{ type: 'text', text }], isError: true }.
  // An image is a block of base64 data and its mediaType (PNG, JPEG, GIF or WebP; not mimeType):
  //     const { readFile } = await import('node:fs/promises');
  //     const png = await readFile(await ctx.workspace.resolve('chart.png', 'read'));
  //     return { content: [{ type: 'text', text: 'the chart' }, { type: 'image', mediaType: 'image/png', data: png.toString('base64') }] };
  // A thrown error becomes an error result for the model; the run goes on.
  // Every start loads this file: import heavy dependencies inside execute (await import('…')),
  // so they cost time only when the tool is called.
  async execute({ text, count = 1 }, ctx) {
    const result = await ctx.exec('date -u +%Y-%m-%dT%H:%M:%SZ');
    return { text: text.repeat(count), at: result.output.trim() };
  },
});
`;
}
