// session/load: the stored conversation sent back to the editor as the session/update
// notifications it would have seen live (the protocol asks for the whole history before the
// response): the user's prompts, the answers, each tool call and how it ended.
import type { SessionUpdate } from '@agentclientprotocol/sdk';
import type { ContentBlock } from '../core/content.ts';
import type { Message } from '../providers/types.ts';
import { toolKind, toolTitle } from './updates.ts';

function parseArgs(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function acpBlock(block: ContentBlock) {
  return block.type === 'text' ? { type: 'text' as const, text: block.text } : { type: 'image' as const, mimeType: block.mediaType, data: block.data };
}

export function replayUpdates(conversation: Message[]): SessionUpdate[] {
  const updates: SessionUpdate[] = [];
  for (const message of conversation) {
    if (message.role === 'user') {
      for (const block of message.content) updates.push({ sessionUpdate: 'user_message_chunk', content: acpBlock(block) });
    } else if (message.role === 'assistant') {
      if (message.text) updates.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: message.text } });
      for (const call of message.toolCalls) {
        const args = parseArgs(call.arguments);
        updates.push({ sessionUpdate: 'tool_call', toolCallId: call.id, title: toolTitle(call.name, args), kind: toolKind(call.name), status: 'pending', rawInput: args });
      }
    } else {
      for (const result of message.results) {
        const text = result.content.map((b) => (b.type === 'text' ? b.text : `[${b.mediaType} image]`)).join('\n');
        updates.push({
          sessionUpdate: 'tool_call_update',
          toolCallId: result.callId,
          status: result.isError ? 'failed' : 'completed',
          content: text ? [{ type: 'content', content: { type: 'text', text } }] : [],
        });
      }
    }
  }
  return updates;
}
