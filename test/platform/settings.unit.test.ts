import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSettings } from '../../platform/settings';

const base = {
  Database__Url: 'postgres://u:p@localhost:5432/fleet',
  Secrets__EncryptionKey: Buffer.alloc(32, 7).toString('base64'),
};

describe('settings', () => {
  test('defaults, and environment variables with __ for :', () => {
    const settings = loadSettings({
      ...base,
      Http__Port: '9090',
      Authentication__Oidc__Authority: 'https://id.example.com/realms/x/',
      Authentication__Oidc__Audience: 'fleet',
    });
    expect(settings.http.port).toBe(9090);
    expect(settings.http.publicBaseUrl).toBe('http://localhost:9090');
    expect(settings.errorsBaseUrl).toBe('http://localhost:9090/errors');
    expect(settings.oidc).toEqual({
      authority: 'https://id.example.com/realms/x',
      audience: 'fleet',
      roleClaim: 'roles',
      tenantClaim: 'tenant',
    });
    expect(settings.git.defaultPollIntervalSeconds).toBe(60);
    // Nothing on the host's disk, and only the built-in outbound refusals, unless configured.
    expect(settings.git.fileRoots).toEqual([]);
    expect(settings.outbound).toEqual({ allow: [], deny: [] });
    expect(Object.isFrozen(settings)).toBe(true);
  });

  test('Git:FileRoots and Outbound:* are comma-separated lists', () => {
    const settings = loadSettings({
      ...base,
      Git__FileRoots: '/srv/git, /tmp/repos/',
      Outbound__Allow: '10.20.0.0/16, git.corp.example,*.intranet.example',
      Outbound__Deny: '10.20.99.0/24',
    });
    expect(settings.git.fileRoots).toEqual(['/srv/git', '/tmp/repos']);
    expect(settings.outbound).toEqual({
      allow: ['10.20.0.0/16', 'git.corp.example', '*.intranet.example'],
      deny: ['10.20.99.0/24'],
    });
  });

  test.each([
    [{ Database__Url: undefined }, 'Invalid setting Database:Url: is required'],
    [{ Http__Port: 'eighty' }, 'Invalid setting Http:Port:'],
    [{ Environment: 'Staging' }, 'Invalid setting Environment:'],
    [
      { Authentication__Oidc__Authority: 'not a url' },
      'Invalid setting Authentication:Oidc:Authority: must be an absolute http(s) URL',
    ],
    [
      { Authentication__Oidc__Authority: 'https://id.example.com' },
      'Invalid setting Authentication:Oidc:Audience: is required when Authentication:Oidc:Authority is set',
    ],
    [{ Secrets__EncryptionKey: 'c2hvcnQ=' }, 'Invalid setting Secrets:EncryptionKey: must be 32 bytes, base64-encoded'],
    [{ Secrets__EncryptionKey: undefined }, 'Invalid setting Secrets:EncryptionKey: is required in Production'],
    [{ Git__FileRoots: 'repos' }, 'Invalid setting Git:FileRoots: must be absolute directories'],
    [{ Outbound__Allow: '10.0.0.0/33' }, 'Invalid setting Outbound:Allow: 10.0.0.0/33 is not a CIDR'],
    [{ Outbound__Deny: 'http://x' }, 'Invalid setting Outbound:Deny: http://x is neither'],
    [
      { Agents__Tls__Groups: 'X25519:no-such-group' },
      'Invalid setting Agents:Tls:Groups: must be a colon-separated list of key exchange groups this OpenSSL knows',
    ],
    [
      { Agents__Tls__TerminatedBy: '10.0.0.0/8,lb.internal' },
      'Invalid setting Agents:Tls:TerminatedBy: lb.internal is neither an IP address nor a CIDR',
    ],
    [
      { Agents__Tls__TerminatedBy: '10.0.0.0/40' },
      'Invalid setting Agents:Tls:TerminatedBy: 10.0.0.0/40 is not a CIDR',
    ],
    [
      { Agents__Tls__TerminatedBy: '10.0.0.5', Agents__Tls__CertificateFile: '/c.pem', Agents__Tls__KeyFile: '/k.pem' },
      'Invalid setting Agents:Tls:CertificateFile: the listener does not end TLS itself when Agents:Tls:TerminatedBy names the proxies that do',
    ],
    [
      { Agents__Tls__TerminatedBy: '10.0.0.5', Agents__Tls__Groups: 'X25519' },
      'Invalid setting Agents:Tls:Groups: the listener does not end TLS itself',
    ],
  ])('a bad value stops with one line naming the key: %j', (override, message) => {
    const env = { ...base, ...override } as Record<string, string | undefined>;
    expect(() => loadSettings(env)).toThrow(message);
    try {
      loadSettings(env);
    } catch (error) {
      expect((error as Error).message).not.toContain('\n');
    }
  });

  test("Agents:Tls:Groups is kept as given; unset, the listener uses OpenSSL's default", () => {
    expect(loadSettings({ ...base, Agents__Tls__Groups: 'X25519:P-256' }).agents.tls.groups).toBe('X25519:P-256');
    expect(loadSettings(base).agents.tls.groups).toBeUndefined();
  });

  test('Agents:Tls:TerminatedBy: addresses and CIDRs, IPv4 and IPv6; unset, none (the listener ends TLS itself)', () => {
    const settings = loadSettings({ ...base, Agents__Tls__TerminatedBy: '10.0.0.0/8, 192.0.2.7,fd00::/8,[::1]' });
    expect(settings.agents.tls.terminatedBy).toEqual(['10.0.0.0/8', '192.0.2.7', 'fd00::/8', '[::1]']);
    expect(loadSettings(base).agents.tls.terminatedBy).toEqual([]);
  });

  test('a JSON settings file, overridden by the environment', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'settings-'));
    const file = path.join(dir, 'settings.json');
    writeFileSync(
      file,
      JSON.stringify({
        Http: { Port: 7000, PublicBaseUrl: 'https://fleet.example.com' },
        Git: { DefaultPollIntervalSeconds: 30 },
      }),
    );
    const settings = loadSettings({ ...base, FLEET_SETTINGS_FILE: file, Http__Port: '7001' });
    expect(settings.http.port).toBe(7001);
    expect(settings.errorsBaseUrl).toBe('https://fleet.example.com/errors');
    expect(settings.git.defaultPollIntervalSeconds).toBe(30);
    writeFileSync(file, JSON.stringify({ Http: { Prot: 1 } }));
    expect(() => loadSettings({ ...base, FLEET_SETTINGS_FILE: file })).toThrow(`Unknown setting Http:Prot in ${file}`);
  });

  test('Development needs no encryption key', () => {
    expect(loadSettings({ Database__Url: base.Database__Url, Environment: 'Development' }).isDevelopment).toBe(true);
  });
});
