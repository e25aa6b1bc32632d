//! TLS for client connections (`--tls-cert`, `--tls-key`): a rustls acceptor from PEM files,
//! through which pgwire answers a client's SSLRequest with `S` (without one it answers `N`, and
//! `sslmode=require` clients refuse to go on, as with a PostgreSQL server without `ssl`).

use std::path::Path;
use std::sync::Arc;

use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::tokio_rustls::rustls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The acceptor for the certificate chain in `cert` and the private key in `key` (PEM); errors
/// name the file.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let read = |path: &Path| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()));
    let certs = CertificateDer::pem_slice_iter(&read(cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: not a PEM certificate chain: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_slice(&read(key)?)
        .map_err(|e| format!("{}: not a PEM private key: {e}", key.display()))?;
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("the certificate and key do not make a TLS configuration: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
