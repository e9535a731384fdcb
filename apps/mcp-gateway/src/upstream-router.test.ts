import { createVouchClient } from '@vouch/client';
import { describe, expect, it } from 'vitest';
import { createGateway } from './gateway';
import { namespaced, splitNamespaced } from './namespace';
import { type Route, routeOfName, unionOfCapabilities } from './upstream-router';

const route = (name: string | null) => ({ name }) as Route;

describe('namespaced names', () => {
  it('joins and splits at the first "__", so a tool name may itself hold "__"', () => {
    expect(namespaced('files', 'read__all')).toBe('files__read__all');
    expect(splitNamespaced('files__read__all')).toEqual({ upstream: 'files', name: 'read__all' });
  });

  it.each(['read', '__read', ''])('finds no namespace in %j', (exposed) => {
    expect(splitNamespaced(exposed)).toBeNull();
  });
});

describe('routeOfName', () => {
  const files = route('files');
  const crm = route('crm');

  it('finds the upstream of a namespaced name and its own name there', () => {
    expect(routeOfName([files, crm], 'crm__search')).toEqual({ route: crm, name: 'search' });
  });

  it.each(['search', 'nope__search', 'crm_search'])('finds none for %j among several', (exposed) => {
    expect(routeOfName([files, crm], exposed)).toBeNull();
  });

  it('takes every name as is with the single unnamed upstream', () => {
    const only = route(null);
    expect(routeOfName([only], 'crm__search')).toEqual({ route: only, name: 'crm__search' });
  });
});

describe('unionOfCapabilities', () => {
  it('offers every capability any upstream offers, a flag on when any has it on', () => {
    expect(
      unionOfCapabilities([
        { tools: { listChanged: true }, resources: { subscribe: false } },
        { resources: { subscribe: true, listChanged: false }, prompts: {} },
        { resources: { subscribe: false }, logging: {} },
        undefined,
      ]),
    ).toEqual({
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: false },
      prompts: {},
      logging: {},
    });
  });
});

describe('createGateway with several upstreams', () => {
  const vouch = createVouchClient({ baseUrl: 'http://vouch.test', apiKey: 'k' });
  const unconnected = { client: {} as never, transport: 'memory' as const };
  const gatewayOf = (upstreams: { name: string; serverId?: string }[]) => () =>
    createGateway({
      upstreams: upstreams.map((named) => ({ ...named, upstream: unconnected })),
      vouch,
      environment: 'production',
    });

  it.each([
    [[{ name: 'a' }, { name: 'b', serverId: 'a' }], /server id "a"/],
    [
      [
        { name: 'a', serverId: 's' },
        { name: 'b', serverId: 's' },
      ],
      /server id "s"/,
    ],
    [[{ name: 'a' }, { name: 'a' }], /not a unique name/],
    [[{ name: 'a_' }], /not a unique name/],
  ])('refuses %j, whose calls could not be told apart', (upstreams, says) => {
    expect(gatewayOf(upstreams)).toThrow(says);
  });
});
