/** One OpAMP request over plain HTTP(S): a protobuf body posted, the reply read within the OpAMP size limit. */
import http from 'node:http';
import https from 'node:https';
import { OPAMP_MAX_MESSAGE_BYTES } from '../../gateway/codec';

export interface PostResult {
  status: number;
  body: Buffer;
  encoding?: string;
}

export function postProtobuf(
  url: URL,
  payload: Uint8Array,
  options: {
    headers: Record<string, string>;
    tls: { ca?: string | Buffer; cert?: string; key?: string };
    agent: http.Agent;
    timeoutMs: number;
  },
): Promise<PostResult> {
  const request = url.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: options.agent,
        timeout: options.timeoutMs,
        headers: {
          ...options.headers,
          'content-type': 'application/x-protobuf',
          'content-length': payload.length,
          'accept-encoding': 'gzip',
        },
        ...(url.protocol === 'https:' ? options.tls : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > OPAMP_MAX_MESSAGE_BYTES) return req.destroy(new Error('reply larger than the OpAMP limit'));
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks),
            encoding: res.headers['content-encoding'],
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no reply within ${options.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}
