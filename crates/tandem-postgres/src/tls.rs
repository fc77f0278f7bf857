//! TLS for PostgreSQL: a rustls client configuration per [`TlsMode`]. (The MySQL drivers and sqlx build their
//! own from the same mode.)
//!
//! - `prefer` / `require`: encrypted, the certificate not checked (what libpq and sqlx do too); the
//!   handshake's signature is still verified against the certificate's key.
//! - `verify-ca`: the chain must end at a trusted root; the name in the certificate is not compared.
//! - `verify-full`: a trusted chain, for the host connected to.
//!
//! Trusted roots: the Mozilla roots of `webpki-roots`, and the PEM file of `sslrootcert=` when given.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tandem_core::{ConnectOptions, Error, Result, TlsErrorKind, TlsMode};

/// The rustls configuration `opts` asks for, or `None` for plain TCP.
pub fn client_config(opts: &ConnectOptions) -> Result<Option<ClientConfig>> {
    if opts.tls == TlsMode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::tls_caused(opts, TlsErrorKind::Handshake, e))?;
    let verifier: Arc<dyn ServerCertVerifier> =
        match (opts.tls.verifies_chain(), opts.tls.verifies_host()) {
            (true, true) => webpki(opts, provider)?,
            (true, false) => Arc::new(Relaxed {
                chain: Some(webpki(opts, provider.clone())?),
                provider,
            }),
            _ => Arc::new(Relaxed {
                chain: None,
                provider,
            }),
        };
    Ok(Some(
        builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth(),
    ))
}

/// The roots to trust: the Mozilla roots, and the URL's file when it names one (as sqlx and the `mysql`
/// crate do, so that a mode means the same on every driver).
fn roots(opts: &ConnectOptions) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(certs) = tandem_core::tls::root_certificates(opts)? {
        let (_, ignored) = store.add_parsable_certificates(certs);
        if ignored > 0 {
            return Err(Error::tls(
                opts,
                TlsErrorKind::RootCertificate,
                format!("{ignored} certificate(s) in the root file cannot be used"),
            ));
        }
    }
    Ok(store)
}

/// The standard verifier: a chain to the roots, for the host connected to (`verify-full`).
fn webpki(
    opts: &ConnectOptions,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots(opts)?), provider)
        .build()
        .map_err(|e| Error::tls_caused(opts, TlsErrorKind::RootCertificate, e))
}

/// The relaxed modes: `verify-ca` checks the chain (`chain`) but not the name; `prefer` / `require` check
/// neither. Either way the handshake must be signed by the certificate's key.
#[derive(Debug)]
struct Relaxed {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Relaxed {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
