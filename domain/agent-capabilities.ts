/**
 * OpAMP's AgentCapabilities bits (a uint64 field, hence bigint), values from the
 * specification. The gateway reads them off the wire; the agents API shows them by name.
 */
export const AgentCapability = Object.freeze({
  ReportsStatus: 0x1n,
  AcceptsRemoteConfig: 0x2n,
  ReportsEffectiveConfig: 0x4n,
  AcceptsPackages: 0x8n,
  ReportsPackageStatuses: 0x10n,
  ReportsOwnTraces: 0x20n,
  ReportsOwnMetrics: 0x40n,
  ReportsOwnLogs: 0x80n,
  AcceptsOpAMPConnectionSettings: 0x100n,
  AcceptsOtherConnectionSettings: 0x200n,
  AcceptsRestartCommand: 0x400n,
  ReportsHealth: 0x800n,
  ReportsRemoteConfig: 0x1000n,
  ReportsHeartbeat: 0x2000n,
  ReportsAvailableComponents: 0x4000n,
  ReportsConnectionSettingsStatus: 0x8000n,
});

export type AgentCapabilityName = keyof typeof AgentCapability;

/** The names of the bits set in `mask`, in bit order; bits the specification does not name are left out. */
export function capabilityNames(mask: number | bigint): AgentCapabilityName[] {
  const bits = BigInt(mask);
  return (Object.keys(AgentCapability) as AgentCapabilityName[]).filter(
    (name) => (bits & AgentCapability[name]) !== 0n,
  );
}
