//! What both executors need of rustls to report TLS the same way: the failure inside a driver's error,
//! classified, and the root certificate file read once with one error for every driver.

use crate::error::{Error, Result, TlsErrorKind};
use crate::options::ConnectOptions;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The TLS failure inside a driver's error, if there is one: rustls' own error anywhere in the chain of
/// sources (also inside an `io::Error`, where TLS streams put it), classified. A driver's plain-text "server
/// does not support TLS" carries no type to find; each executor recognises it where its driver raises it.
pub fn failure(err: &(dyn std::error::Error + 'static)) -> Option<(TlsErrorKind, rustls::Error)> {
    use rustls::{CertificateError, Error as Rustls};
    let mut next = Some(err);
    while let Some(e) = next {
        let inner = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|i| i as &(dyn std::error::Error + 'static));
        if let Some(r) = e
            .downcast_ref::<Rustls>()
            .or_else(|| inner.and_then(|i| i.downcast_ref::<Rustls>()))
        {
            let kind = match r {
                Rustls::InvalidCertificate(
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. },
                ) => TlsErrorKind::HostMismatch,
                Rustls::InvalidCertificate(_) => TlsErrorKind::UntrustedCertificate,
                _ => TlsErrorKind::Handshake,
            };
            return Some((kind, r.clone()));
        }
        next = inner.or_else(|| e.source());
    }
    None
}

/// The certificates of the URL's root file (`sslrootcert=`, `ssl-ca=`), or `None` when it names none. A
/// file that cannot be read or holds no certificate is [`TlsErrorKind::RootCertificate`], whichever driver
/// would have read it next.
pub fn root_certificates(opts: &ConnectOptions) -> Result<Option<Vec<CertificateDer<'static>>>> {
    let Some(path) = &opts.tls_root_cert else {
        return Ok(None);
    };
    let unusable = |why: String| {
        Error::tls(
            opts,
            TlsErrorKind::RootCertificate,
            format!("{}: {why}", path.display()),
        )
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| unusable(e.to_string()))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| unusable(e.to_string()))?;
    if certs.is_empty() {
        return Err(unusable("no certificate in it".into()));
    }
    Ok(Some(certs))
}
