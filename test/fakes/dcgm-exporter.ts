/** A fake dcgm-exporter: a real HTTP server on 127.0.0.1 serving a scrape body at /metrics. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeDcgmExporter {
  url: string;
  body: string;
  scrapes: number;
  close(): Promise<void>;
}

export async function startFakeDcgmExporter(body: string, port = 0): Promise<FakeDcgmExporter> {
  const state = { body, scrapes: 0 };
  const server: Server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    state.scrapes++;
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
    res.end(state.body);
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  return {
    url,
    get body() {
      return state.body;
    },
    set body(b: string) {
      state.body = b;
    },
    get scrapes() {
      return state.scrapes;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
