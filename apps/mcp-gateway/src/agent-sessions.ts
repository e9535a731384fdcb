import type { ServerResponse } from 'node:http';
import type { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { Counter, Gauge, Registry } from 'prom-client';
import type { Gateway } from './gateway';
import type { Logger } from './logger';

/** Who a session belongs to (an agent of the HTTP server, by its configured name). */
export interface SessionAgent {
  name: string;
}

/** How many HTTP sessions may be open, and for how long one may sit unused. */
export interface SessionLimits {
  /** Close a session when nothing of it is open or running for this long (default 15 minutes). */
  idleTimeoutMs: number;
  /** Open sessions of one agent; at the cap its least recently used idle one is closed (default 16). */
  maxPerAgent: number;
  /** Open sessions of all agents; past it a new one is refused (default 256). */
  maxTotal: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  idleTimeoutMs: 15 * 60_000,
  maxPerAgent: 16,
  maxTotal: 256,
};

/** Why a session ended, as the `reason` label of `vouch_mcp_gateway_sessions_closed_total`. */
export type SessionEnd = 'agent' | 'idle' | 'evicted' | 'shutdown';

/** One agent session: its gateway (and upstream connections) and the transport it is served on. */
export interface AgentSession {
  agent: SessionAgent;
  gateway: Gateway;
  transport: NodeStreamableHTTPServerTransport;
  /** When the agent last sent a request on it (`now()` of the table). */
  lastSeen: number;
  /** Its open response streams (the agent's GET stream, long answers). */
  streams: number;
  /** Set when the gateway closes it, for the metric; otherwise the agent (or its transport) did. */
  ending?: SessionEnd;
}

/** Whether a new session may open, or the refusal (status and code) to answer. */
export type Admission = { ok: true } | { ok: false; status: number; code: string; message: string };

/** The metric names, as documented in the gateway README ("Sessions"). */
export const SESSION_METRIC_NAMES = [
  'vouch_mcp_gateway_sessions_open',
  'vouch_mcp_gateway_sessions_closed_total',
  'vouch_mcp_gateway_sessions_refused_total',
] as const;

/**
 * The open HTTP sessions of a gateway, with their limits: an idle session is closed (its
 * gateway drained and closed, so a stdio upstream's process ends with it), one agent cannot
 * hold more than its share, and the total is capped. Labels carry no agent name or token.
 */
export function createSessionTable(options: { limits: SessionLimits; logger: Logger; now?: () => number }) {
  const { limits, logger } = options;
  const now = options.now ?? Date.now;
  const sessions = new Map<string, AgentSession>();
  const registry = new Registry();
  new Gauge({
    name: 'vouch_mcp_gateway_sessions_open',
    help: 'Agent sessions open over HTTP (MCP 2025-era; 2026-07-28 requests hold none).',
    registers: [registry],
    collect() {
      this.set(sessions.size);
    },
  });
  const closed = new Counter({
    name: 'vouch_mcp_gateway_sessions_closed_total',
    help: 'Agent sessions closed, by reason: agent, idle, evicted, shutdown.',
    labelNames: ['reason'],
    registers: [registry],
  });
  const refused = new Counter({
    name: 'vouch_mcp_gateway_sessions_refused_total',
    help: 'New agent sessions refused at the session cap.',
    registers: [registry],
  });

  const idle = (session: AgentSession) =>
    session.streams === 0 && session.gateway.inFlight() === 0 && session.ending === undefined;
  const end = (session: AgentSession, reason: SessionEnd) => {
    session.ending = reason;
    void session.transport.close().catch(() => {});
  };

  const table = {
    registry,
    get: (id: string) => sessions.get(id),
    all: () => [...sessions.values()],
    add(id: string, session: AgentSession) {
      sessions.set(id, session);
    },
    /** Forget a closed session and count why it ended. */
    remove(id: string | undefined, session: AgentSession) {
      if (id !== undefined && sessions.get(id) === session) sessions.delete(id);
      closed.inc({ reason: session.ending ?? 'agent' });
    },
    /** A request of the session arrived; `res` is its response, open until it ends. */
    touch(session: AgentSession, res: ServerResponse) {
      session.lastSeen = now();
      session.streams++;
      res.once('close', () => {
        session.streams--;
        session.lastSeen = now();
      });
    },
    /**
     * Room for one more session of `agent`: at the agent's cap its least recently used idle
     * session is closed; when none is idle, or all agents together are at the cap, refused.
     */
    admit(agent: SessionAgent): Admission {
      const own = table.all().filter((session) => session.agent === agent && session.ending === undefined);
      if (own.length >= limits.maxPerAgent) {
        const oldest = own.filter(idle).sort((a, b) => a.lastSeen - b.lastSeen)[0];
        if (!oldest) {
          refused.inc();
          return refusal(429, `this agent has ${own.length} sessions open, none idle; close one first`);
        }
        logger.info('agent session evicted', { agent: agent.name, reason: 'at the per-agent cap' });
        end(oldest, 'evicted');
      } else if (sessions.size >= limits.maxTotal) {
        refused.inc();
        return refusal(503, 'the gateway has as many sessions open as it serves; try again later');
      }
      return { ok: true };
    },
    /** Close every session unused for `idleTimeoutMs`. */
    sweep() {
      const before = now() - limits.idleTimeoutMs;
      for (const session of table.all()) {
        if (idle(session) && session.lastSeen <= before) {
          logger.info('agent session closed', { agent: session.agent.name, reason: 'idle' });
          end(session, 'idle');
        }
      }
    },
    /** Close every session (the gateway stops). */
    closeAll: () =>
      Promise.all(
        table.all().map((session) => {
          session.ending = 'shutdown';
          return session.transport.close().catch(() => {});
        }),
      ),
  };
  return table;
}

export type SessionTable = ReturnType<typeof createSessionTable>;

function refusal(status: number, message: string): Admission {
  return { ok: false, status, code: 'SESSION_LIMIT_REACHED', message };
}
