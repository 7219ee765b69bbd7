// The part of Anthropic's SDK conch uses. The SDK's `Anthropic` class builds every resource of the
// API (models, files, skills, organization, the whole beta tree) and imports their modules, which
// are most of the SDK: loading it cost a run 16 MiB of memory where this client costs 7 (issue 17).
// The base client with the Messages resource sends the same requests, through the same code.
import { BaseAnthropic } from '@anthropic-ai/sdk/client';
import { Messages } from '@anthropic-ai/sdk/resources/messages/messages';

export { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk/core/error';
export { transformJSONSchema } from '@anthropic-ai/sdk/lib/transform-json-schema';

export class MessagesClient extends BaseAnthropic {
  readonly messages: Messages = new Messages(this);
}
