/**
 * What a fleet of simulated agents shares: one connect limiter (a reconnect storm of 10,000
 * agents) and one keep-alive HTTP(S) agent.
 */
import http from 'node:http';
import https from 'node:https';

/** Bounds concurrent connection attempts (a reconnect storm of 10,000 agents). */
export class ConnectLimiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(readonly limit: number) {}

  async acquire(): Promise<() => void> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next)
        next(); // the slot passes on
      else this.active--;
    };
  }
}

export interface SharedResources {
  limiter: ConnectLimiter;
  httpAgent: http.Agent;
  /** Pools are keyed by ca/cert/key, so one agent serves every client certificate. */
  httpsAgent: https.Agent;
  destroy(): void;
}

export function createSharedResources(connectConcurrency = 200): SharedResources {
  const httpAgent = new http.Agent({ keepAlive: true });
  const httpsAgent = new https.Agent({ keepAlive: true });
  return {
    limiter: new ConnectLimiter(connectConcurrency),
    httpAgent,
    httpsAgent,
    destroy: () => {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}
