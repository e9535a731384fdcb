import {
  type Notification,
  type Prompt,
  ProtocolError,
  ProtocolErrorCode,
  type Resource,
  type ResourceTemplateType as ResourceTemplate,
  type Server,
  type ServerCapabilities,
  UriTemplate,
} from '@modelcontextprotocol/server';
import type { CallToolDeps } from './call-tool';
import type { GovernedMethod } from './governed-request';
import { allPages } from './list-pages';
import type { Logger } from './logger';
import { TOOLS_CALL } from './methods';
import { namespaced, splitNamespaced } from './namespace';
import {
  ANY_RESULT,
  type ForwardingExtra,
  forwardingExtraOf,
  forwardingOptions,
  HOP_BY_HOP,
} from './pass-through';
import type { Upstream } from './upstream-call';

/** One upstream of a gateway: its namespace (null for the single unnamed one) and how it is governed. */
export interface Route {
  name: string | null;
  upstream: Upstream;
  serverId: string;
  governed: readonly GovernedMethod[];
  deps: CallToolDeps;
}

/** An agent request, as the SDK hands it over. */
export interface AgentRequest {
  method: string;
  params?: Record<string, unknown>;
}

/** Send `request` to one route's upstream: through Vouch when a governed rule matches, else straight on. */
export type SendToRoute = (route: Route, request: AgentRequest, extra: ForwardingExtra) => Promise<unknown>;

/** The route of an exposed tool or prompt name, and that name as its upstream knows it. */
export function routeOfName(
  routes: readonly Route[],
  exposed: string,
): { route: Route; name: string } | null {
  const [only] = routes;
  if (routes.length === 1 && only?.name === null) return { route: only, name: exposed };
  const split = splitNamespaced(exposed);
  const route = split && routes.find((candidate) => candidate.name === split.upstream);
  return route && split ? { route, name: split.name } : null;
}

/**
 * What the gateway offers the agent for several upstreams: the union of their capabilities
 * (a flag such as `listChanged` or `subscribe` is on when any upstream has it).
 */
export function unionOfCapabilities(all: readonly (ServerCapabilities | undefined)[]): ServerCapabilities {
  const union: Record<string, Record<string, unknown>> = {};
  for (const capabilities of all) {
    for (const [key, value] of Object.entries(capabilities ?? {})) {
      if (typeof value !== 'object' || value === null) continue;
      const merged = union[key] ?? {};
      union[key] = merged;
      for (const [flag, setting] of Object.entries(value as Record<string, unknown>)) {
        merged[flag] = merged[flag] === true ? true : setting;
      }
    }
  }
  return union as ServerCapabilities;
}

/**
 * Requests and notifications between the agent and several upstreams. Tools and prompts
 * carry their upstream's namespace (`<upstream>__<name>`); a resource goes to the upstream
 * that listed it (in `resources/list`) or whose template (`resources/templates/list`) matches
 * its URI. Lists are gathered from every upstream into one answer. A request that names no
 * known upstream is an MCP error and reaches none.
 */
export function routeThrough(options: {
  server: Server;
  routes: readonly Route[];
  /** Take a request through Vouch when a governed rule of its route matches; null: not governed. */
  governed: (route: Route, request: AgentRequest, extra: ForwardingExtra) => Promise<unknown> | null;
  logger: Logger;
  timeoutMs: number;
  /** Also forward what the upstreams send towards the agent (default true; see `passThrough`). */
  towardsAgent?: boolean;
}): void {
  const { server, routes, logger, timeoutMs } = options;
  const send: SendToRoute = async (route, request, extra) =>
    options.governed(route, request, extra) ??
    route.upstream.client.request(request as never, ANY_RESULT, forwardingOptions(request, extra, timeoutMs));
  /** The upstreams that listed each resource URI (in `resources/list`). */
  const owners = new Map<string, Set<Route>>();
  const templates = new Map<Route, { template: string; match: UriTemplate }[]>();
  const offers = (route: Route, capability: keyof ServerCapabilities) =>
    route.upstream.client.getServerCapabilities()?.[capability] !== undefined;

  /** Every page of a list from every upstream that offers it, in configuration order. */
  const gather = <T>(
    method: string,
    capability: keyof ServerCapabilities,
    key: string,
    extra: ForwardingExtra,
  ) =>
    gatherFrom<T>(
      routes.filter((route) => offers(route, capability)),
      send,
      { method, key },
      extra,
    );

  const remember = (listed: { route: Route; item: Resource }[]) => {
    for (const { route, item } of listed) {
      const listedBy = owners.get(item.uri) ?? new Set<Route>();
      listedBy.add(route);
      owners.set(item.uri, listedBy);
    }
  };
  /** Replace the templates of the upstreams that were listed (`listedRoutes`) with what they listed. */
  const rememberTemplates = (
    listed: { route: Route; item: ResourceTemplate }[],
    listedRoutes: readonly Route[] = routes,
  ) => {
    for (const route of listedRoutes) templates.delete(route);
    for (const { route, item } of listed) {
      try {
        const list = templates.get(route) ?? [];
        list.push({ template: item.uriTemplate, match: new UriTemplate(item.uriTemplate) });
        templates.set(route, list);
      } catch {
        logger.warn('an upstream listed a resource template that is not a URI template', {
          upstream: route.name,
        });
      }
    }
  };

  /**
   * List the resources and templates of the upstreams whose lists are not governed, to learn
   * where an unknown URI or template lives (a governed list is a proposal only the agent's own
   * request makes).
   */
  const refreshIndex = async (extra: ForwardingExtra) => {
    const open = routes.filter(
      (route) =>
        offers(route, 'resources') &&
        !route.governed.some(
          (rule) => rule.method === 'resources/list' || rule.method === 'resources/templates/list',
        ),
    );
    const [resources, found] = await Promise.all([
      gatherFrom<Resource>(open, send, { method: 'resources/list', key: 'resources' }, extra),
      gatherFrom<ResourceTemplate>(
        open,
        send,
        { method: 'resources/templates/list', key: 'resourceTemplates' },
        extra,
      ),
    ]);
    remember(resources);
    rememberTemplates(found, open);
  };

  /**
   * The upstreams a resource URI may belong to: those that listed it, else those whose
   * template matches it.
   */
  const claimantsOf = (uri: string): Route[] => {
    const listedBy = owners.get(uri);
    if (listedBy && listedBy.size > 0) return routes.filter((route) => listedBy.has(route));
    return routes.filter((route) =>
      (templates.get(route) ?? []).some(({ match }) => match.match(uri) !== null),
    );
  };

  /**
   * The upstream of a resource URI. A URI two upstreams claim is refused rather than sent to
   * either: each upstream is governed by its own rules, and the agent could otherwise read
   * through an ungoverned upstream what the operator governs on another.
   */
  const ownerOf = async (uri: string, extra: ForwardingExtra): Promise<Route> => {
    if (claimantsOf(uri).length === 0) await refreshIndex(extra);
    const claimants = claimantsOf(uri);
    if (claimants.length === 0) {
      throw new ProtocolError(-32002, `Resource not found: no upstream lists ${uri}`, { uri });
    }
    if (claimants.length > 1) {
      const names = claimants.map((route) => route.name);
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `the resource ${uri} is claimed by several upstreams (${names.join(', ')}); it is sent to none`,
        { uri, upstreams: names },
      );
    }
    return claimants[0]!;
  };

  /** The upstream that listed a resource template (for completions of its variables); one only. */
  const ownerOfTemplate = async (template: string, extra: ForwardingExtra): Promise<Route> => {
    const listers = () =>
      routes.filter((route) => (templates.get(route) ?? []).some((known) => known.template === template));
    if (listers().length === 0) await refreshIndex(extra);
    const found = listers();
    if (found.length === 0)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `no upstream lists the resource template ${template}`,
      );
    if (found.length > 1) {
      const names = found.map((route) => route.name);
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `the resource template ${template} is listed by several upstreams (${names.join(', ')}); it is sent to none`,
        { template, upstreams: names },
      );
    }
    return found[0]!;
  };

  const named = (exposed: unknown, what: string) => {
    const found = typeof exposed === 'string' ? routeOfName(routes, exposed) : null;
    if (!found) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `unknown ${what} ${JSON.stringify(exposed)}: names are <upstream>__<name>, for an upstream of this gateway`,
      );
    }
    return found;
  };

  server.fallbackRequestHandler = async (request, ctx) => {
    const extra = forwardingExtraOf(ctx);
    const params = (request.params ?? {}) as Record<string, unknown>;
    switch (request.method) {
      case TOOLS_CALL:
        throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'tool calls go through Vouch only');
      case 'resources/list': {
        const listed = await gather<Resource>('resources/list', 'resources', 'resources', extra);
        remember(listed);
        return { resources: listed.map(({ item }) => item) } as never;
      }
      case 'resources/templates/list': {
        const listed = await gather<ResourceTemplate>(
          'resources/templates/list',
          'resources',
          'resourceTemplates',
          extra,
        );
        rememberTemplates(listed);
        return { resourceTemplates: listed.map(({ item }) => item) } as never;
      }
      case 'prompts/list': {
        const listed = await gather<Prompt>('prompts/list', 'prompts', 'prompts', extra);
        return {
          prompts: listed.map(({ route, item }) => ({ ...item, name: namespaced(route.name!, item.name) })),
        } as never;
      }
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe': {
        const route = await ownerOf(String(params.uri ?? ''), extra);
        return (await send(route, request, extra)) as never;
      }
      case 'prompts/get': {
        const { route, name } = named(params.name, 'prompt');
        return (await send(route, { ...request, params: { ...params, name } }, extra)) as never;
      }
      case 'completion/complete': {
        const ref = (params.ref ?? {}) as Record<string, unknown>;
        if (ref.type === 'ref/prompt') {
          const { route, name } = named(ref.name, 'prompt');
          return (await send(
            route,
            { ...request, params: { ...params, ref: { ...ref, name } } },
            extra,
          )) as never;
        }
        const route = await ownerOfTemplate(String(ref.uri ?? ''), extra);
        return (await send(route, request, extra)) as never;
      }
      case 'logging/setLevel': {
        await Promise.all(
          routes.filter((route) => offers(route, 'logging')).map((route) => send(route, request, extra)),
        );
        return {} as never;
      }
      default:
        throw new ProtocolError(
          ProtocolErrorCode.MethodNotFound,
          `${request.method} cannot be routed to one of several upstreams`,
        );
    }
  };

  for (const route of options.towardsAgent === false ? [] : routes) {
    // Server-to-client requests (sampling, elicitation, roots) go to the agent, whichever upstream asks.
    route.upstream.client.fallbackRequestHandler = async (request, ctx) =>
      server.request(request, ANY_RESULT, forwardingOptions(request, forwardingExtraOf(ctx), timeoutMs));
    route.upstream.client.fallbackNotificationHandler = async (notification: Notification) => {
      if (HOP_BY_HOP.has(notification.method)) return;
      if (notification.method === 'notifications/resources/list_changed') {
        for (const listedBy of owners.values()) listedBy.delete(route);
        templates.delete(route);
      }
      await server.notification(notification as never).catch((error: unknown) => {
        logger.warn('could not forward a notification', {
          direction: 'upstream->agent',
          upstream: route.name,
          method: notification.method,
          error: String(error),
        });
      });
    };
  }
  // roots/list_changed and the like concern every upstream.
  server.fallbackNotificationHandler = async (notification: Notification) => {
    if (HOP_BY_HOP.has(notification.method)) return;
    await Promise.all(
      routes.map((route) =>
        route.upstream.client.notification(notification as never).catch((error: unknown) => {
          logger.warn('could not forward a notification', {
            direction: 'agent->upstream',
            upstream: route.name,
            method: notification.method,
            error: String(error),
          });
        }),
      ),
    );
  };
}

async function gatherFrom<T>(
  routes: readonly Route[],
  send: SendToRoute,
  list: { method: string; key: string },
  extra: ForwardingExtra,
): Promise<{ route: Route; item: T }[]> {
  const perRoute = await Promise.all(
    routes.map(async (route) => {
      const items = await allPages<T>(`the ${list.method} of upstream ${route.name}`, async (cursor) => {
        const params = cursor === undefined ? {} : { cursor };
        const page = (await send(route, { method: list.method, params }, extra)) as Record<string, unknown>;
        const nextCursor = typeof page.nextCursor === 'string' ? page.nextCursor : undefined;
        return { items: (page[list.key] as T[] | undefined) ?? [], nextCursor };
      });
      return items.map((item) => ({ route, item }));
    }),
  );
  return perRoute.flat();
}
