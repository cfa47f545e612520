//! A job's figures and their spread ([`summary`]), and their comparison with a saved
//! baseline's ([`compare`]). Saving and loading a baseline file is the driver's.

pub mod compare;
pub mod summary;
