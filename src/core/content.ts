// What a model sees and what a tool gives back, shared by providers, the tool framework, the file
// machinery and every host. Declared here, below all of them, so none imports another for a type.

export type ContentBlock =
  | { type: 'text'; text: string }
  /** base64 data, e.g. mediaType 'image/png' */
  | { type: 'image'; mediaType: string; data: string };

/** Image types both providers' APIs take; an image of another type fails the whole request. */
export const MODEL_IMAGE_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/** A structured tool result. */
export interface ToolResult {
  content: ContentBlock[];
  isError?: boolean;
  /** Extra data for hosts (diffs, revisions); not sent to the model. */
  details?: Record<string, unknown>;
}

/** A tool result the model reads as text. */
export function textResult(text: string, details?: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text }], ...(details ? { details } : {}) };
}

/** A tool error: the model reads it and the run goes on (it never ends the run by itself). */
export function errorResult(text: string, details?: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text }], isError: true, ...(details ? { details } : {}) };
}
