/**
 * OpAMP wire codec: protobuf (de)serialisation of AgentToServer / ServerToAgent and the two
 * transports' framing (WebSocket varint header, HTTP body with optional gzip).
 *
 * Pure functions, no I/O. Every failure on input from an agent is an `OpampFrameError` with a
 * machine-readable `reason`, so the gateway can close the socket / answer 400 without
 * inspecting messages. Limits are enforced here so no transport can forget them.
 */
import { create, fromBinary, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { gunzipSync, gzipSync } from 'node:zlib';
import { AgentToServerSchema, ServerToAgentSchema, type AgentToServer, type ServerToAgent } from './gen/opamp_pb';

export { AgentToServerSchema, ServerToAgentSchema };
export type { AgentToServer, ServerToAgent };

/** Largest protobuf payload accepted or sent on either transport (after decompression). */
export const OPAMP_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** Payloads smaller than this are sent uncompressed even to clients that accept gzip. */
export const OPAMP_GZIP_MIN_BYTES = 1024;

/** The only WebSocket header the specification defines: varint 0, i.e. one byte 0x00. */
const WS_HEADER = Buffer.from([0x00]);

/** A varint is at most 10 bytes (64 bits, 7 per byte). */
const MAX_VARINT_BYTES = 10;

export type OpampFrameErrorReason =
  | 'truncated-header' // WebSocket message ends inside (or before) the varint header
  | 'bad-header' // header is not 0, or is an over-long varint
  | 'too-large' // payload (or decompressed body) exceeds OPAMP_MAX_MESSAGE_BYTES
  | 'bad-protobuf' // payload is not a valid message
  | 'bad-gzip' // body declared gzip but does not inflate
  | 'unsupported-encoding'; // Content-Encoding other than gzip / identity

export class OpampFrameError extends Error {
  override readonly name = 'OpampFrameError';
  constructor(
    readonly reason: OpampFrameErrorReason,
    message: string,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------
// Capability and flag bits (uint64 fields, hence bigint). Values from the specification.

export { AgentCapability } from '../domain/agent-capabilities';

export const ServerCapability = Object.freeze({
  AcceptsStatus: 0x1n,
  OffersRemoteConfig: 0x2n,
  AcceptsEffectiveConfig: 0x4n,
  OffersPackages: 0x8n,
  AcceptsPackagesStatus: 0x10n,
  OffersConnectionSettings: 0x20n,
  AcceptsConnectionSettingsRequest: 0x40n,
});

export const AgentToServerFlag = Object.freeze({
  RequestInstanceUid: 0x1n,
});

export const ServerToAgentFlag = Object.freeze({
  ReportFullState: 0x1n,
  ReportAvailableComponents: 0x2n,
});

/** True when every bit of `bit` is set in `bits`. */
export function hasBits(bits: bigint, bit: bigint): boolean {
  return (bits & bit) === bit;
}

// ---------------------------------------------------------------------------------------
// Protobuf

export function decodeAgentToServer(payload: Uint8Array): AgentToServer {
  assertSize(payload.length, 'AgentToServer');
  return decode(() => fromBinary(AgentToServerSchema, payload), 'AgentToServer');
}

export function encodeServerToAgent(message: ServerToAgent | MessageInitShape<typeof ServerToAgentSchema>): Uint8Array {
  const bytes = toBinary(ServerToAgentSchema, create(ServerToAgentSchema, message));
  assertSize(bytes.length, 'ServerToAgent');
  return bytes;
}

/** Client side (agent simulator, tests). */
export function encodeAgentToServer(message: AgentToServer | MessageInitShape<typeof AgentToServerSchema>): Uint8Array {
  const bytes = toBinary(AgentToServerSchema, create(AgentToServerSchema, message));
  assertSize(bytes.length, 'AgentToServer');
  return bytes;
}

/** Client side (agent simulator, tests). */
export function decodeServerToAgent(payload: Uint8Array): ServerToAgent {
  assertSize(payload.length, 'ServerToAgent');
  return decode(() => fromBinary(ServerToAgentSchema, payload), 'ServerToAgent');
}

function decode<T>(parse: () => T, what: string): T {
  try {
    return parse();
  } catch (error) {
    // Truncated fields, bad wire types, bad varints, and stack exhaustion on absurdly deep
    // nesting (RangeError) all end here: the message is refused, the process is unharmed.
    const detail = error instanceof Error ? error.message : String(error);
    throw new OpampFrameError('bad-protobuf', `malformed ${what}: ${detail}`);
  }
}

function assertSize(length: number, what: string): void {
  if (length > OPAMP_MAX_MESSAGE_BYTES) {
    throw new OpampFrameError(
      'too-large',
      `${what} of ${length} bytes exceeds the ${OPAMP_MAX_MESSAGE_BYTES}-byte limit`,
    );
  }
}

// ---------------------------------------------------------------------------------------
// WebSocket: binary message = varint header (must be 0) + protobuf payload

/** Returns the protobuf payload of one WebSocket binary message (a view, not a copy). */
export function unframeWebSocket(data: Buffer): Buffer {
  const { value, length } = readHeaderVarint(data);
  if (value !== 0n) {
    throw new OpampFrameError('bad-header', `WebSocket header is ${value}, expected 0`);
  }
  const payload = data.subarray(length);
  assertSize(payload.length, 'WebSocket message');
  return payload;
}

export function frameWebSocket(payload: Uint8Array): Buffer {
  assertSize(payload.length, 'WebSocket message');
  return Buffer.concat([WS_HEADER, payload]);
}

function readHeaderVarint(data: Buffer): { value: bigint; length: number } {
  let value = 0n;
  for (let i = 0; i < MAX_VARINT_BYTES; i++) {
    const byte = data[i];
    if (byte === undefined) {
      throw new OpampFrameError(
        'truncated-header',
        data.length === 0 ? 'empty WebSocket message' : 'WebSocket message ends inside the varint header',
      );
    }
    value |= BigInt(byte & 0x7f) << BigInt(7 * i);
    if ((byte & 0x80) === 0) return { value, length: i + 1 };
  }
  throw new OpampFrameError('bad-header', `WebSocket header varint is longer than ${MAX_VARINT_BYTES} bytes`);
}

// ---------------------------------------------------------------------------------------
// HTTP: POST body of application/x-protobuf, optionally Content-Encoding: gzip

/** Returns the protobuf payload of a request body, inflating gzip within the size limit. */
export function decodeHttpBody(body: Buffer, contentEncoding?: string): Buffer {
  const encoding = (contentEncoding ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') {
    assertSize(body.length, 'HTTP body');
    return body;
  }
  if (encoding !== 'gzip' && encoding !== 'x-gzip') {
    throw new OpampFrameError('unsupported-encoding', `Content-Encoding "${contentEncoding}" is not supported`);
  }
  assertSize(body.length, 'gzip HTTP body');
  return gunzipLimited(body);
}

function gunzipLimited(body: Buffer): Buffer {
  try {
    // maxOutputLength makes zlib stop (and throw) as soon as the output would pass the
    // limit, so a gzip bomb never costs more than OPAMP_MAX_MESSAGE_BYTES of memory.
    return gunzipSync(body, { maxOutputLength: OPAMP_MAX_MESSAGE_BYTES });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new OpampFrameError(
        'too-large',
        `gzip HTTP body inflates beyond the ${OPAMP_MAX_MESSAGE_BYTES}-byte limit`,
      );
    }
    const detail = error instanceof Error ? error.message : String(error);
    throw new OpampFrameError('bad-gzip', `gzip HTTP body does not inflate: ${detail}`);
  }
}

export interface HttpBody {
  body: Buffer;
  /** Value for the Content-Encoding response header, when compressed. */
  contentEncoding?: 'gzip';
}

export function encodeHttpBody(payload: Uint8Array, acceptGzip: boolean): HttpBody {
  assertSize(payload.length, 'HTTP body');
  const body = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (!acceptGzip || payload.length < OPAMP_GZIP_MIN_BYTES) return { body };
  return { body: gzipSync(body), contentEncoding: 'gzip' };
}

/** Whether an Accept-Encoding header admits gzip (honours `q=0` and `*`). */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  if (!acceptEncoding) return false;
  let wildcard = false;
  for (const part of acceptEncoding.split(',')) {
    const [coding = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const allowed = q === undefined || Number(q.slice(2)) > 0;
    if (coding === 'gzip' || coding === 'x-gzip') return allowed;
    if (coding === '*') wildcard = allowed;
  }
  return wildcard;
}
