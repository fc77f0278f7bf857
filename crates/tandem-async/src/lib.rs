//! tandem-async
