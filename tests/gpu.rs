//! The semantic tests on a real GPU (CUDA). Each test skips with a printed reason where there is
//! no driver or device, and fails instead under `KACHE_REQUIRE_GPU=1`.
