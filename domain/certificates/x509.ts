// reflect-metadata must be loaded before @peculiar/x509 (its ASN.1 schemas use decorators).
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

// Node's webcrypto is the provider; the library's DOM typings are absent under lib ES2023.
x509.cryptoProvider.set(webcrypto as never);

export { x509, webcrypto };

/** Errors the CA module refuses with carry a machine-readable reason and a readable message. */
export class AgentCertificateError<Reason extends string = string> extends Error {
  constructor(
    readonly reason: Reason,
    message: string,
  ) {
    super(message);
  }
}
