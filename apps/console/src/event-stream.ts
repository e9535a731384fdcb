// Server-sent events over fetch: EventSource cannot send the Authorization header, and the
// key must not travel in a URL (it would land in logs and history).

export interface StreamHandle {
  close(): void;
}

/** Read `path` as text/event-stream; call `onEvent` per `event:` block; reconnect from the last id. */
export function openEventStream(
  url: () => URL,
  key: string,
  onEvent: (event: string, data: string) => void,
  onState: (state: 'live' | 'reconnecting') => void,
): StreamHandle {
  const controller = new AbortController();
  let lastId: string | null = null;
  const run = async () => {
    while (!controller.signal.aborted) {
      try {
        const response = await fetch(url(), {
          headers: {
            authorization: `Bearer ${key}`,
            accept: 'text/event-stream',
            ...(lastId ? { 'last-event-id': lastId } : {}),
          },
          signal: controller.signal,
        });
        if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
        onState('live');
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          const blocks = buffer.split('\n\n');
          buffer = blocks.pop() ?? '';
          for (const block of blocks) {
            let event = 'message';
            let data = '';
            for (const line of block.split('\n')) {
              if (line.startsWith('event: ')) event = line.slice(7);
              else if (line.startsWith('data: ')) data += line.slice(6);
              else if (line.startsWith('id: ')) lastId = line.slice(4);
            }
            onEvent(event, data);
          }
        }
      } catch {
        if (controller.signal.aborted) return;
      }
      onState('reconnecting');
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  };
  void run();
  return { close: () => controller.abort() };
}
