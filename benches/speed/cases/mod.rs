//! The suite's parts, one file per concern; `PARTS` in suite.rs lists them.

pub mod attention;
pub mod elementwise;
pub mod gemm;
pub mod histogram;
pub mod matmul;
pub mod matrix;
pub mod reduce;
pub mod rows;
pub mod scan;
pub mod science;
pub mod sort;
pub mod stencil;
