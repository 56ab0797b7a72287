//! Confining plugin code. For now only the probe of what this kernel can enforce.

pub mod probe;
