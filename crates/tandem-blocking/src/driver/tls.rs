//! TLS for the `postgres` driver: a rustls client configuration per [`TlsMode`]. (The `mysql` crate and sqlx
//! build their own from the same mode; see `driver::mysql` and `tandem-async`.)
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
pub(crate) fn client_config(opts: &ConnectOptions) -> Result<Option<ClientConfig>> {
    if opts.tls == TlsMode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::tls(opts, TlsErrorKind::Handshake, e.to_string()))?;
    let verifier: Arc<dyn ServerCertVerifier> = if opts.tls.verifies_chain() {
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots(opts)?), provider)
            .build()
            .map_err(|e| Error::tls(opts, TlsErrorKind::RootCertificate, e.to_string()))?;
        if opts.tls.verifies_host() {
            webpki
        } else {
            Arc::new(AnyName(webpki))
        }
    } else {
        Arc::new(Unchecked(provider))
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

/// `verify-ca`: the chain is checked, the name is not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
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
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` / `require`: any certificate, but the handshake must be signed by its key.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
