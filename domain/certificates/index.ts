export {
  agentCaCertificatePem,
  createSelfSignedCa,
  loadAgentCa,
  loadOrCreateAgentCa,
  loadAgentCaFromFiles,
  type AgentCa,
} from './ca';
export { checkCsr, CsrRejectedError, type CheckedCsr, type CsrRefusal } from './csr';
export { issueLeafCertificate, agentUri, type IssuedLeaf } from './leaf';
export {
  verifyAgentCertificate,
  verifyAuthorizedPeer,
  handshakeRefusal,
  commonName,
  CertificateRejectedError,
  type AgentIdentity,
  type CertificateRefusal,
} from './verify';
export { AgentCertificateError } from './x509';
export { issueServerCertificate, readServerCertificate, type ServerCertificate } from './server-certificate';
