/**
 * The live-updates hub (docs/events.md) for the console's pages: a WebSocket opened with
 * the session cookie (the hub admits it from our own origin only), subscribed to event
 * patterns, and opened again after a drop with `since` = the last event seen, so nothing
 * is missed. The events are the API's CloudEvents.
 */
import { useQueryClient, type QueryClient, type QueryKey } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import type { Schemas } from './client';

export type CloudEvent = Schemas['CloudEvent'];

const RETRY_MS = [1_000, 2_000, 5_000, 10_000];
/** A burst of events (a rollout's batch, agents reconnecting) refreshes a page once per this. */
const REFRESH_EVERY_MS = 1_000;

type HubMessage = { specversion?: string; type: string; code?: string; since?: string };

function hubUrl(): string {
  return `${window.location.protocol === 'https:' ? 'wss' : 'ws'}://${window.location.host}/hubs/live-updates`;
}

/**
 * Calls `onEvent` with each event matching `patterns` (`rollout.*`, `agent.connected`, `*`),
 * and `onGap` each time the hub confirms a subscription without `since` (the first, or one after
 * a drop before any event or after `since-*`): what happened before it is not replayed, so a page
 * read before it may already be stale.
 */
export function useLiveEvents(
  patterns: readonly string[],
  onEvent: (event: CloudEvent) => void,
  onGap: () => void = () => {},
): void {
  const handler = useRef({ onEvent, onGap });
  useEffect(() => {
    handler.current = { onEvent, onGap };
  });
  const events = patterns.join(',');
  useEffect(() => {
    let socket: WebSocket | undefined;
    let since: string | undefined;
    let attempt = 0;
    let retry: number | undefined;
    let stopped = false;
    const subscribe = () =>
      socket?.send(JSON.stringify({ type: 'subscribe', events: events.split(','), ...(since && { since }) }));
    const onMessage = (message: MessageEvent<string>) => {
      const data = JSON.parse(message.data) as HubMessage;
      if (data.specversion) {
        since = (data as CloudEvent).id;
        handler.current.onEvent(data as CloudEvent);
      } else if (data.type === 'subscribed' && !data.since) {
        handler.current.onGap();
      } else if (data.type === 'error' && data.code?.startsWith('since-')) {
        since = undefined; // too old to replay: subscribe afresh (and refetch, on its `subscribed`)
        subscribe();
      }
    };
    const connect = () => {
      socket = new WebSocket(hubUrl());
      socket.onopen = () => {
        attempt = 0;
        subscribe();
      };
      socket.onmessage = onMessage;
      socket.onclose = () => {
        if (!stopped) retry = window.setTimeout(connect, RETRY_MS[Math.min(attempt++, RETRY_MS.length - 1)]);
      };
    };
    connect();
    return () => {
      stopped = true;
      window.clearTimeout(retry);
      socket?.close();
    };
  }, [events]);
}

/**
 * Refetches `queryKey` for an event. A fetch already under way may have read before the event,
 * so it is awaited and another one made; it is not cancelled instead, which under a steady
 * stream of events could cancel every fetch before it answers.
 */
async function refetchAfterEvent(queryClient: QueryClient, queryKey: QueryKey): Promise<void> {
  if (queryClient.isFetching({ queryKey }) > 0)
    await queryClient.invalidateQueries({ queryKey }, { cancelRefetch: false });
  await queryClient.invalidateQueries({ queryKey }, { cancelRefetch: false });
}

/**
 * Refetches the page's queries when events matching `patterns` arrive (at most once a second);
 * `concerns` narrows them further (one rollout's events: their subject is the rollout or, for
 * `rollout.agent-updated`, the agent, so the page looks at `data.rolloutId`). It also refetches
 * them once the hub confirms a subscription with nothing replayed: an event committed between the
 * page's first read and that confirmation (a one-agent handover finishing) reaches no one.
 */
export function useLiveRefresh(
  patterns: readonly string[],
  queryKeys: readonly QueryKey[],
  concerns: (event: CloudEvent) => boolean = () => true,
  /**
   * On the same subscription: `onEvent` gets each event that concerns the page as it comes
   * (a page that shows events themselves), and `gapKeys` are read again only after a gap.
   */
  also: { onEvent?: (event: CloudEvent) => void; gapKeys?: readonly QueryKey[] } = {},
): void {
  const queryClient = useQueryClient();
  const pending = useRef<number | undefined>(undefined);
  useEffect(() => () => window.clearTimeout(pending.current), []);
  const refetch = (keys: readonly QueryKey[]) => {
    for (const queryKey of keys) void refetchAfterEvent(queryClient, queryKey);
  };
  useLiveEvents(
    patterns,
    (event) => {
      if (!concerns(event)) return;
      also.onEvent?.(event);
      if (pending.current !== undefined) return;
      pending.current = window.setTimeout(() => {
        pending.current = undefined;
        refetch(queryKeys);
      }, REFRESH_EVERY_MS);
    },
    () => refetch([...queryKeys, ...(also.gapKeys ?? [])]),
  );
}
