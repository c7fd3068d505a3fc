import { randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { create, equals } from '@bufbuild/protobuf';
import {
  AgentCapability,
  AgentToServerSchema,
  OPAMP_GZIP_MIN_BYTES,
  OPAMP_MAX_MESSAGE_BYTES,
  OpampFrameError,
  ServerCapability,
  ServerToAgentFlag,
  ServerToAgentSchema,
  acceptsGzip,
  decodeAgentToServer,
  decodeHttpBody,
  decodeServerToAgent,
  encodeAgentToServer,
  encodeHttpBody,
  encodeServerToAgent,
  frameWebSocket,
  hasBits,
  unframeWebSocket,
  type OpampFrameErrorReason,
} from '../../gateway/codec';
import {
  AgentCapabilities,
  RemoteConfigStatuses,
  ServerCapabilities,
  ServerToAgentFlags,
} from '../../gateway/gen/opamp_pb';

const instanceUid = Buffer.from('0192f3c4a1b27c3d8e4f5a6b7c8d9e0f', 'hex'); // UUID v7, 16 bytes
const configHash = Buffer.from('9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08', 'hex');
const csrPem = [
  '-----BEGIN CERTIFICATE REQUEST-----',
  'MIIBBjCBrQIBADBLMUkwRwYDVQQDDEAwMTkyZjNjNGExYjI3YzNkOGU0ZjVhNmI3',
  'YzhkOWUwZjBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABH8=',
  '-----END CERTIFICATE REQUEST-----',
  '',
].join('\n');
const collectorYaml = 'receivers:\n  otlp:\n    protocols:\n      grpc: {}\nexporters:\n  debug: {}\n';
const attributesYaml = `processors:\n  attributes/env:\n    actions:\n${Array.from(
  { length: 40 },
  (_, i) => `      - { key: team.${i}, value: platform-${i}, action: upsert }\n`,
).join('')}`;

function str(key: string, value: string) {
  return { key, value: { value: { case: 'stringValue' as const, value } } };
}

function agentStatus() {
  return create(AgentToServerSchema, {
    instanceUid,
    sequenceNum: 7n,
    agentDescription: {
      identifyingAttributes: [
        str('service.name', 'io.opentelemetry.collector'),
        str('service.instance.id', '0192f3c4-a1b2-7c3d-8e4f-5a6b7c8d9e0f'),
        str('service.version', '0.112.0'),
      ],
      nonIdentifyingAttributes: [str('os.type', 'linux'), str('host.name', 'edge-17')],
    },
    capabilities:
      AgentCapability.ReportsStatus |
      AgentCapability.AcceptsRemoteConfig |
      AgentCapability.ReportsEffectiveConfig |
      AgentCapability.AcceptsOpAMPConnectionSettings |
      AgentCapability.ReportsHealth |
      AgentCapability.ReportsRemoteConfig |
      AgentCapability.ReportsHeartbeat,
    health: { healthy: true, startTimeUnixNano: 1_763_790_000_000_000_000n, status: 'StatusOK' },
    effectiveConfig: {
      configMap: { configMap: { '': { body: Buffer.from(collectorYaml), contentType: 'text/yaml' } } },
    },
    remoteConfigStatus: {
      lastRemoteConfigHash: configHash,
      status: RemoteConfigStatuses.RemoteConfigStatuses_FAILED,
      errorMessage: 'exporters::otlp: unknown field "endpoitn"',
    },
    connectionSettingsRequest: {
      opamp: { certificateRequest: { csr: Buffer.from(csrPem) } },
    },
  });
}

function configOffer() {
  return create(ServerToAgentSchema, {
    instanceUid,
    capabilities:
      ServerCapability.AcceptsStatus |
      ServerCapability.OffersRemoteConfig |
      ServerCapability.AcceptsEffectiveConfig |
      ServerCapability.OffersConnectionSettings |
      ServerCapability.AcceptsConnectionSettingsRequest,
    flags: ServerToAgentFlag.ReportFullState,
    remoteConfig: {
      config: {
        configMap: {
          'collector.yaml': { body: Buffer.from(collectorYaml), contentType: 'text/yaml' },
          'attributes.yaml': { body: Buffer.from(attributesYaml), contentType: 'text/yaml' },
        },
      },
      configHash,
    },
    connectionSettings: {
      hash: Buffer.from('cs-1'),
      opamp: {
        destinationEndpoint: 'wss://fleet.example.com:4320/v1/opamp',
        heartbeatIntervalSeconds: 30n,
        certificate: {
          cert: Buffer.from('-----BEGIN CERTIFICATE-----\nleaf\n-----END CERTIFICATE-----\n'),
          caCert: Buffer.from('-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n'),
        },
      },
    },
  });
}

function frameError(fn: () => unknown): OpampFrameError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(OpampFrameError);
    return error as OpampFrameError;
  }
  throw new Error('expected an OpampFrameError, nothing was thrown');
}

function expectReason(fn: () => unknown, reason: OpampFrameErrorReason): OpampFrameError {
  const error = frameError(fn);
  expect(error.reason).toBe(reason);
  return error;
}

describe('OpAMP protobuf messages', () => {
  test('an agent status report survives WebSocket framing and decoding intact', () => {
    const sent = agentStatus();
    const frame = frameWebSocket(encodeAgentToServer(sent));
    expect(frame[0]).toBe(0x00);

    const received = decodeAgentToServer(unframeWebSocket(frame));

    expect(equals(AgentToServerSchema, received, sent)).toBe(true);
    expect(Buffer.from(received.instanceUid)).toHaveLength(16);
    expect(received.agentDescription?.identifyingAttributes.map((a) => [a.key, a.value?.value.value])).toEqual([
      ['service.name', 'io.opentelemetry.collector'],
      ['service.instance.id', '0192f3c4-a1b2-7c3d-8e4f-5a6b7c8d9e0f'],
      ['service.version', '0.112.0'],
    ]);
    expect(hasBits(received.capabilities, AgentCapability.AcceptsRemoteConfig)).toBe(true);
    expect(hasBits(received.capabilities, AgentCapability.ReportsConnectionSettingsStatus)).toBe(false);
    expect(received.remoteConfigStatus?.status).toBe(RemoteConfigStatuses.RemoteConfigStatuses_FAILED);
    expect(Buffer.from(received.remoteConfigStatus!.lastRemoteConfigHash).equals(configHash)).toBe(true);
    const csr = received.connectionSettingsRequest?.opamp?.certificateRequest?.csr;
    expect(Buffer.from(csr!).toString()).toBe(csrPem);
  });

  test('a configuration offer with a certificate survives HTTP gzip encoding and decoding intact', () => {
    const sent = configOffer();
    const { body, contentEncoding } = encodeHttpBody(encodeServerToAgent(sent), true);
    expect(contentEncoding).toBe('gzip');

    const received = decodeServerToAgent(decodeHttpBody(body, contentEncoding));

    expect(equals(ServerToAgentSchema, received, sent)).toBe(true);
    const file = received.remoteConfig?.config?.configMap['collector.yaml'];
    expect(Buffer.from(file!.body).toString()).toBe(collectorYaml);
    expect(file!.contentType).toBe('text/yaml');
    expect(Buffer.from(received.remoteConfig!.configHash).equals(configHash)).toBe(true);
    expect(Buffer.from(received.connectionSettings!.opamp!.certificate!.cert).toString()).toContain('leaf');
    expect(received.connectionSettings!.opamp!.heartbeatIntervalSeconds).toBe(30n);
    expect(hasBits(received.flags, ServerToAgentFlag.ReportFullState)).toBe(true);
  });

  test('field numbers match the specification on the wire (hand-encoded bytes)', () => {
    // AgentToServer: 1 instance_uid, 2 sequence_num, 4 capabilities, 7 remote_config_status
    // { 1 last_remote_config_hash, 2 status = APPLIED, 3 error_message }, 10 flags.
    const wire = Buffer.concat([
      Buffer.from([0x0a, 0x10]),
      instanceUid,
      Buffer.from([0x10, 0x05]),
      Buffer.from([0x20, 0x83, 0x20]), // 0x1003 = ReportsStatus | AcceptsRemoteConfig | ReportsRemoteConfig
      Buffer.from([0x3a, 0x06, 0x0a, 0x02, 0xab, 0xcd, 0x10, 0x01]),
      Buffer.from([0x50, 0x01]),
    ]);
    const message = decodeAgentToServer(wire);
    expect(Buffer.from(message.instanceUid).equals(instanceUid)).toBe(true);
    expect(message.sequenceNum).toBe(5n);
    expect(message.capabilities).toBe(0x1003n);
    expect(message.remoteConfigStatus?.status).toBe(RemoteConfigStatuses.RemoteConfigStatuses_APPLIED);
    expect(Buffer.from(message.remoteConfigStatus!.lastRemoteConfigHash).toString('hex')).toBe('abcd');
    expect(message.flags).toBe(1n);

    // ServerToAgent: 1 instance_uid, 6 flags, 7 capabilities, 8 agent_identification{1}.
    const bytes = encodeServerToAgent({
      instanceUid,
      flags: ServerToAgentFlag.ReportFullState,
      capabilities: ServerCapability.AcceptsStatus | ServerCapability.AcceptsConnectionSettingsRequest,
      agentIdentification: { newInstanceUid: Buffer.alloc(16, 0xee) },
    });
    expect(Buffer.from(bytes).toString('hex')).toBe(
      Buffer.concat([
        Buffer.from([0x0a, 0x10]),
        instanceUid,
        Buffer.from([0x30, 0x01, 0x38, 0x41, 0x42, 0x12, 0x0a, 0x10]),
        Buffer.alloc(16, 0xee),
      ]).toString('hex'),
    );
  });

  test('capability and flag constants agree with the generated enums', () => {
    for (const [name, bit] of Object.entries(AgentCapability)) {
      const generated = AgentCapabilities[`AgentCapabilities_${name}` as keyof typeof AgentCapabilities];
      expect([name, BigInt(generated)]).toEqual([name, bit]);
    }
    for (const [name, bit] of Object.entries(ServerCapability)) {
      const generated = ServerCapabilities[`ServerCapabilities_${name}` as keyof typeof ServerCapabilities];
      expect([name, BigInt(generated)]).toEqual([name, bit]);
    }
    expect(BigInt(ServerToAgentFlags.ServerToAgentFlags_ReportFullState)).toBe(ServerToAgentFlag.ReportFullState);
    // The bits TECH-NOTES names, by value.
    expect(AgentCapability.AcceptsOpAMPConnectionSettings).toBe(0x100n);
    expect(AgentCapability.ReportsHeartbeat).toBe(0x2000n);
    expect(AgentCapability.ReportsConnectionSettingsStatus).toBe(0x8000n);
    expect(ServerCapability.OffersConnectionSettings).toBe(0x20n);
    expect(ServerCapability.AcceptsConnectionSettingsRequest).toBe(0x40n);
  });

  test('an empty payload is a valid (empty) AgentToServer', () => {
    const message = decodeAgentToServer(unframeWebSocket(Buffer.from([0x00])));
    expect(message.instanceUid).toHaveLength(0);
  });
});

describe('WebSocket framing errors', () => {
  const payload = encodeAgentToServer(agentStatus());

  test('a header other than 0 is refused', () => {
    const error = expectReason(() => unframeWebSocket(Buffer.concat([Buffer.from([0x01]), payload])), 'bad-header');
    expect(error.message).toMatch(/header is 1, expected 0/);
    expectReason(() => unframeWebSocket(Buffer.from([0x80, 0x01, 0x0a])), 'bad-header'); // varint 128
  });

  test('a message that ends inside the varint header is refused', () => {
    expectReason(() => unframeWebSocket(Buffer.from([0x80])), 'truncated-header');
    expectReason(() => unframeWebSocket(Buffer.from([0xff, 0xff, 0xff])), 'truncated-header');
    expectReason(() => unframeWebSocket(Buffer.alloc(0)), 'truncated-header');
  });

  test('a varint header longer than 10 bytes is refused', () => {
    expectReason(() => unframeWebSocket(Buffer.alloc(12, 0x80)), 'bad-header');
  });

  test('an oversize message is refused on receipt and never sent', () => {
    const huge = Buffer.alloc(OPAMP_MAX_MESSAGE_BYTES + 2);
    expectReason(() => unframeWebSocket(huge), 'too-large');
    expectReason(() => frameWebSocket(Buffer.alloc(OPAMP_MAX_MESSAGE_BYTES + 1)), 'too-large');
    expect(unframeWebSocket(huge.subarray(0, OPAMP_MAX_MESSAGE_BYTES + 1))).toHaveLength(OPAMP_MAX_MESSAGE_BYTES);
    const oversizeOffer = {
      remoteConfig: { config: { configMap: { big: { body: Buffer.alloc(OPAMP_MAX_MESSAGE_BYTES) } } } },
    };
    expectReason(() => encodeServerToAgent(oversizeOffer), 'too-large');
  });
});

describe('garbage protobuf', () => {
  test('truncated fields, bad wire types and runaway varints are refused', () => {
    const cases: [string, number[]][] = [
      ['length past the end', [0x0a, 0x10, 0x01, 0x02]],
      ['wire type 7', [0x0f, 0x00]],
      ['field number 0', [0x02, 0x00]],
      ['varint never ends', [0x10, ...Array<number>(11).fill(0xff)]],
      ['nested message truncated', [0x3a, 0x04, 0x0a, 0x09, 0x00, 0x00]],
    ];
    for (const [name, bytes] of cases) {
      const error = frameError(() => decodeAgentToServer(Buffer.from(bytes)));
      expect([name, error.reason]).toEqual([name, 'bad-protobuf']);
    }
  });

  test('absurdly deep nesting is refused instead of crashing the process', () => {
    // health { component_health_map { "" : { component_health_map { ... } } } } 10,000 deep.
    // (@bufbuild/protobuf stops at a recursion depth of 100; the codec reports it as bad-protobuf.)
    const depth = 10_000;
    const sizes = [0];
    const entry: number[] = [];
    for (let i = 1; i <= depth; i++) {
      const inner = sizes[i - 1]!;
      entry[i] = 1 + varintLength(inner) + inner; // map entry: value (field 2) = inner ComponentHealth
      sizes[i] = 1 + varintLength(entry[i]!) + entry[i]!; // ComponentHealth: field 6 = entry
    }
    const out: number[] = [0x2a, ...varint(sizes[depth]!)]; // AgentToServer.health (field 5)
    for (let i = depth; i >= 1; i--) out.push(0x32, ...varint(entry[i]!), 0x12, ...varint(sizes[i - 1]!));
    const bytes = Buffer.from(out);
    expect(bytes.length).toBeLessThan(OPAMP_MAX_MESSAGE_BYTES);

    expectReason(() => decodeAgentToServer(bytes), 'bad-protobuf');
  });

  test('random bytes either decode or fail with OpampFrameError, and always return', () => {
    const started = Date.now();
    for (let i = 0; i < 2000; i++) {
      const bytes = randomBytes(1 + (i % 512));
      try {
        decodeAgentToServer(bytes);
      } catch (error) {
        expect(error).toBeInstanceOf(OpampFrameError);
      }
    }
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe('HTTP bodies', () => {
  const payload = encodeAgentToServer(agentStatus());

  test('plain and gzip request bodies yield the same payload', () => {
    expect(decodeHttpBody(Buffer.from(payload))).toEqual(Buffer.from(payload));
    expect(decodeHttpBody(Buffer.from(payload), 'identity')).toEqual(Buffer.from(payload));
    expect(decodeHttpBody(gzipSync(payload), 'gzip')).toEqual(Buffer.from(payload));
    expect(decodeHttpBody(gzipSync(payload), ' GZIP ')).toEqual(Buffer.from(payload));
  });

  test('a gzip bomb is refused by the decompressed-size limit without inflating it', () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024)); // 64 MiB of zeros, ~64 KiB compressed
    expect(bomb.length).toBeLessThan(256 * 1024);
    const error = expectReason(() => decodeHttpBody(bomb, 'gzip'), 'too-large');
    expect(error.message).toMatch(/inflates beyond/);
    // Exactly at the limit is accepted.
    expect(decodeHttpBody(gzipSync(Buffer.alloc(OPAMP_MAX_MESSAGE_BYTES)), 'gzip')).toHaveLength(
      OPAMP_MAX_MESSAGE_BYTES,
    );
  });

  test('oversize plain bodies, broken gzip and other encodings are refused', () => {
    expectReason(() => decodeHttpBody(Buffer.alloc(OPAMP_MAX_MESSAGE_BYTES + 1)), 'too-large');
    expectReason(() => decodeHttpBody(Buffer.from('not gzip at all'), 'gzip'), 'bad-gzip');
    expectReason(() => decodeHttpBody(gzipSync(payload).subarray(0, 20), 'gzip'), 'bad-gzip');
    expectReason(() => decodeHttpBody(Buffer.from(payload), 'br'), 'unsupported-encoding');
    expectReason(() => decodeHttpBody(Buffer.from(payload), 'gzip, deflate'), 'unsupported-encoding');
  });

  test('responses are gzipped only when accepted and worth it', () => {
    const small = encodeServerToAgent({ instanceUid });
    expect(small.length).toBeLessThan(OPAMP_GZIP_MIN_BYTES);
    expect(encodeHttpBody(small, true)).toEqual({ body: Buffer.from(small) });

    const large = Buffer.from(encodeServerToAgent(configOffer()));
    expect(large.length).toBeGreaterThanOrEqual(OPAMP_GZIP_MIN_BYTES);
    expect(encodeHttpBody(large, false)).toEqual({ body: large });
    const gz = encodeHttpBody(large, true);
    expect(gz.contentEncoding).toBe('gzip');
    expect(gz.body.length).toBeLessThan(large.length);
    expect(gunzipSync(gz.body).equals(large)).toBe(true);
  });

  test('Accept-Encoding parsing honours q=0 and wildcards', () => {
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip('gzip')).toBe(true);
    expect(acceptsGzip('deflate, gzip;q=0.5')).toBe(true);
    expect(acceptsGzip('gzip;q=0')).toBe(false);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('*, gzip;q=0')).toBe(false);
    expect(acceptsGzip('identity')).toBe(false);
  });
});

function varint(value: number): number[] {
  const bytes: number[] = [];
  while (value > 0x7f) {
    bytes.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
  return bytes;
}

function varintLength(value: number): number {
  return varint(value).length;
}
