// One ACP session: its own config (the session's cwd is the workspace), workspace policy, sandbox,
// plugins and provider, and one conversation that every prompt in the session continues.
import { RequestError, type AgentContext, type PromptResponse, type SessionUpdate } from '@agentclientprotocol/sdk';
import type { CliFlags } from '../config/types.ts';
import type { Message } from '../providers/types.ts';
import type { RunEvent } from '../agent/events.ts';
import { planStart, startRun, type StartedRun, type StartPlan } from '../host/start.ts';
import { setupProblem } from '../host/setup-error.ts';
import { acpApprover } from './permission.ts';
import { SessionNotFoundError } from '../sessions/dir.ts';
import { newSessionId } from '../sessions/store.ts';
import { outcomeNotice, PromptContentError, promptContent, stopReasonFor, UpdateMapper } from './updates.ts';
import type { ContentBlock as AcpContent, McpServer } from '@agentclientprotocol/sdk';
import { editorServers } from './mcp-servers.ts';
import type { AcpGuard } from './guard.ts';
import { offersMcpTools } from '../host/mcp.ts';
import type { ContentBlock } from '../core/content.ts';
import { invokeSkill } from '../host/skills.ts';
import { skillCommands, slashSkill, withSkillText } from './skill-commands.ts';

/** JSON-RPC code for a run that failed; `data.code` carries conch's failure code. */
export const RUN_FAILED = -32603;

export type Log = (message: string) => void;

/** Sends updates in order; `flush` resolves once everything queued so far is written. */
class Notifier {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: AgentContext,
    private readonly sessionId: string,
    private readonly log: Log,
  ) {}

  send(update: SessionUpdate): void {
    this.chain = this.chain
      .then(() => this.client.notify('session/update', { sessionId: this.sessionId, update }))
      .catch((error) => this.log(`could not send an update: ${(error as Error).message}`));
  }

  flush(): Promise<void> {
    return this.chain;
  }
}

interface Turn {
  controller: AbortController;
  done: Promise<unknown>;
}

export interface OpenOptions {
  /** session/load: the stored session to continue (its full id). */
  load?: string;
  /** `conch acp --ephemeral`: store nothing (a loaded session is continued in memory only). */
  ephemeral?: boolean;
  /** The MCP servers the editor passed in session/new or session/load. */
  mcpServers?: McpServer[];
  /** The server's watchdog hooks: plugin loading and each prompt's deadline. */
  guard?: AcpGuard;
}

export class AcpSession {
  private turn: Turn | null = null;
  private activeCall: { id: string; args: unknown } | null = null;

  private constructor(
    readonly id: string,
    private readonly host: StartedRun,
    private readonly notifier: Notifier,
    private readonly log: Log,
    private readonly guard?: AcpGuard,
  ) {}

  /** Every earlier exchange (a loaded session's too); each run appends its prompt's messages in place. */
  get conversation(): Message[] {
    return this.host.recording.conversation;
  }

  /** Send updates (the replayed history) before the response that ends the current request. */
  async send(updates: SessionUpdate[]): Promise<void> {
    for (const update of updates) this.notifier.send(update);
    await this.notifier.flush();
  }

  /** Build a session for `cwd` (absolute, checked by the caller) with the flags `conch acp` was given. */
  static async open(cwd: string, flags: CliFlags, client: AgentContext, log: Log, options: OpenOptions = {}): Promise<AcpSession> {
    let planned: StartPlan;
    try {
      planned = await planStart(flags, cwd, { session: { ...(options.load ? { resume: options.load } : {}), ephemeral: options.ephemeral } });
      // A prefix is a convenience for people typing; an editor names a session exactly.
      if (options.load && planned.plan.loaded?.header.id !== options.load) throw new SessionNotFoundError(`no session '${options.load}'`);
    } catch (error) {
      // ACP's own code for a session that does not exist, as session/prompt answers for one not open.
      if (options.load && error instanceof SessionNotFoundError) throw new RequestError(-32002, error.message, { sessionId: options.load });
      throw setupError(error);
    }
    const id = options.load ?? (options.ephemeral ? crypto.randomUUID() : newSessionId());
    const notifier = new Notifier(client, id, log);
    for (const note of planned.narrowed) log(`session ${id}: the recorded policy keeps this run narrower: ${note}`);
    // The approver reads the session's live state; it is bound before the session object exists.
    let self: AcpSession | null = null;
    const approver = acpApprover({
      client,
      sessionId: id,
      activeCall: () => self?.activeCall ?? null,
      signal: () => self?.turn?.controller.signal ?? null,
      flush: () => notifier.flush(),
      log,
    });
    let host: StartedRun;
    const loader = options.guard?.loader();
    try {
      host = await startRun(flags, cwd, {
        approver,
        planned,
        sessionId: id,
        mcpServers: await editorServers(options.mcpServers ?? [], (m) => log(`session ${id}: ${m}`)),
        ...(loader ? { beforePluginImport: loader.beforePluginImport } : {}),
      });
    } catch (error) {
      throw setupError(error);
    } finally {
      loader?.done();
    }
    if (options.guard && offersMcpTools(host.session)) await options.guard.watch();
    // The config's own (a project config ignored in an untrusted workspace, a home workspace made read-only) first.
    for (const warning of host.warnings.splice(0)) log(`session ${id}: ${warning}`);
    self = new AcpSession(id, host, notifier, log, options.guard);
    return self;
  }

  /** Offer the session's skills as slash commands; call once the session/new response is out. */
  announceCommands(): void {
    const skills = this.host.session.skills.set.skills;
    if (skills.length) this.notifier.send({ sessionUpdate: 'available_commands_update', availableCommands: skillCommands(skills) });
  }

  /** A prompt starting with `/skill-name` gets that skill's body in front, as --skill does. */
  private async expandSkills(task: ContentBlock[]): Promise<ContentBlock[]> {
    const slash = slashSkill(task, this.host.session.skills.set.skills);
    if (slash) {
      const invoked = await invokeSkill(this.host.session.skills.set, slash.name, this.host.session.workspace);
      if (!invoked.ok) throw RequestError.invalidParams({ sessionId: this.id }, `/${invoked.message}`);
      task = withSkillText(task, invoked.text, slash.rest);
    }
    return task;
  }

  get running(): boolean {
    return this.turn !== null;
  }

  async prompt(blocks: AcpContent[], requestSignal: AbortSignal): Promise<PromptResponse> {
    if (this.turn) {
      throw RequestError.invalidRequest({ sessionId: this.id }, `a prompt is already running in session ${this.id}; send session/cancel first`);
    }
    let task;
    try {
      task = promptContent(blocks);
    } catch (error) {
      if (error instanceof PromptContentError) throw RequestError.invalidParams({ sessionId: this.id }, error.message);
      throw error;
    }
    const controller = new AbortController();
    // The client withdrawing the request ($/cancel_request) or hanging up cancels like session/cancel.
    const onRequestAbort = () => controller.abort(new Error('request cancelled'));
    requestSignal.addEventListener('abort', onRequestAbort, { once: true });
    const mapper = new UpdateMapper(this.host.session.workspace.root);
    const sink = {
      emit: (event: RunEvent) => {
        if (event.type === 'tool.started') this.activeCall = { id: event.callId, args: event.args };
        else if (event.type === 'tool.finished') this.activeCall = null;
        for (const update of mapper.map(event)) this.notifier.send(update);
      },
    };
    const historyBefore = this.conversation.length;
    // Expanded inside the turn, so that a second prompt meanwhile is refused as already running.
    const run = this.expandSkills(task).then((expanded) => this.host.run(expanded, { sink, signal: controller.signal }));
    this.turn = { controller, done: run };
    const ended = this.guard?.turn(this.host.config.limits.deadline_ms);
    try {
      const outcome = await run;
      for (const warning of this.host.recording.warnings.splice(0)) this.log(`session ${this.id}: ${warning}`);
      // A failed turn leaves no trace in the history: a prompt the provider rejected (a bad image,
      // too long a message) would otherwise be sent again, and rejected again, on every later turn.
      if (outcome.status === 'failed') this.conversation.length = historyBefore;
      const notice = outcomeNotice(outcome);
      if (notice) this.notifier.send({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: notice } });
      // Every update of this turn goes out before the response that ends it.
      await this.notifier.flush();
      if (outcome.status === 'failed') {
        throw new RequestError(RUN_FAILED, outcome.message ?? 'the run failed', { code: outcome.code ?? 'internal', status: 'failed' });
      }
      return { stopReason: stopReasonFor(outcome) };
    } finally {
      ended?.();
      requestSignal.removeEventListener('abort', onRequestAbort);
      this.activeCall = null;
      this.turn = null;
    }
  }

  /** session/cancel: the same AbortSignal path as Ctrl-C on the command line. */
  cancel(): void {
    this.turn?.controller.abort(new Error('cancelled by the client'));
  }

  async dispose(): Promise<void> {
    const turn = this.turn;
    if (turn) {
      turn.controller.abort(new Error('session closed'));
      await turn.done.catch(() => {});
    }
    await this.host.dispose();
    // dispose() adds what went wrong at the end (spans the collector never got).
    for (const warning of this.host.warnings.splice(0)) this.log(`session ${this.id}: ${warning}`);
  }
}

/** A setup problem the user can fix becomes an invalid-params error naming it; anything else is a bug. */
function setupError(error: unknown): unknown {
  const message = setupProblem(error);
  return message === null ? error : new RequestError(-32602, message, { code: 'config_invalid' });
}
