use std::f32::consts::PI;
