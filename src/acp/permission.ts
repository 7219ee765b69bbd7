// "ask" command rules over ACP: instead of a terminal prompt, conch sends session/request_permission
// and the editor asks its user. Any answer other than an allow option counts as no.
import type { AgentContext, PermissionOption } from '@agentclientprotocol/sdk';
import type { ApprovalAnswer, Approver } from '../policy/command-rules.ts';
import { visibleCommand } from '../policy/approve.ts';

export const PERMISSION_OPTIONS: PermissionOption[] = [
  { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
  { optionId: 'allow_always', name: 'Always allow (this session)', kind: 'allow_always' },
  { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
];

export interface PermissionContext {
  client: AgentContext;
  sessionId: string;
  /** The bash call being decided (tools run one at a time, so this is the one asking). */
  activeCall(): { id: string; args: unknown } | null;
  /** The running prompt's signal: a cancelled turn withdraws its question. */
  signal(): AbortSignal | null;
  /** Resolves once every update sent so far is written, so the tool call exists before we ask about it. */
  flush(): Promise<void>;
  log(message: string): void;
}

export function acpApprover(ctx: PermissionContext): Approver {
  let fallbackIds = 0;
  return async (command, rule): Promise<ApprovalAnswer> => {
    const signal = ctx.signal();
    if (signal?.aborted) return 'deny';
    const call = ctx.activeCall();
    await ctx.flush();
    try {
      const response = await ctx.client.request(
        'session/request_permission',
        {
          sessionId: ctx.sessionId,
          toolCall: {
            toolCallId: call?.id ?? `conch-permission-${++fallbackIds}`,
            title: `Run \`${visibleCommand(command)}\` (command rule "${visibleCommand(rule)}" asks first)`,
            kind: 'execute',
            rawInput: call?.args ?? { command },
          },
          options: PERMISSION_OPTIONS,
        },
        signal ? { cancellationSignal: signal, stopWaitingOnCancel: true } : {},
      );
      const outcome = response.outcome;
      if (outcome.outcome !== 'selected') return 'deny';
      if (outcome.optionId === 'allow_once') return 'once';
      if (outcome.optionId === 'allow_always') return 'always';
      return 'deny';
    } catch (error) {
      // A withdrawn question (cancelled turn) or a client that cannot answer: the command does not run.
      if (!signal?.aborted) ctx.log(`permission request failed, treating it as rejected: ${(error as Error).message}`);
      return 'deny';
    }
  };
}
