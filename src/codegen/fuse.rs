//! Multiply-adds fused in the IR, before NVPTX code generation, where the back end would fuse
//! them anyway.
//!
//! A kernel that contracts (`fmad`, the default) marks its float multiplies and adds
//! `contract`, and the NVPTX back end turns `fadd (fmul a, b), c` into `fma a, b, c` while it
//! combines the selection DAG. It fuses even a multiply with other uses (NVPTX asks for
//! aggressive fusion), and when both operands of an add are multiplies it fuses the one with
//! fewer uses, counting each one's uses by walking them: a product used by many adds (a
//! coefficient times a value the kernel reuses) is walked once per add, quadratic in the
//! kernel's length (5% of a 5,000-statement kernel's miss, more than any other single
//! function, and with the DAG nodes it no longer builds, about a third of code generation).
//! Fusing here, where the choice is the back end's whatever order it combines in, leaves it no
//! such add to weigh. The PTX of the corpus, the examples and the generated kernels is
//! byte-identical with and without this pass, for sm_80 and sm_90; of the speed suite's, one
//! kernel differs (the unchecked saxpy's tail: NVPTX's speculative execution, which counts a
//! multiply and an add against its budget but not an `fma` call, now hoists two address
//! computations out of the tail's conditional blocks, two instructions fewer).
//!
//! The choice is the back end's where: the add and the multiply are `float` or `double`, both
//! `contract` (and no other fast-math flag), in the same block; neither operand of the add is a negation (the back end turns
//! those into subtractions first); the multiply is by no constant of magnitude 1 or 2 and by
//! no `select` (the back end rewrites those multiplies itself). Then, if one operand is such a
//! multiply, it is fused; if both are, the first is fused when the add is its only use (its
//! count cannot be the larger), and otherwise the add is left to the back end.

use inkwell::module::Module;
use inkwell::types::AnyTypeEnum;
use inkwell::values::{BasicValue, BasicValueEnum, InstructionOpcode, InstructionValue};

use super::CodegenError;

fn err(what: impl std::fmt::Display) -> CodegenError {
    CodegenError::Llvm(format!("fusing multiply-adds: {what}"))
}

/// Fuses into `llvm.fma` each `fadd` whose multiply the NVPTX back end would fuse (see the
/// module's documentation).
pub(super) fn fuse_multiply_adds<'ctx>(m: &Module<'ctx>) -> Result<(), CodegenError> {
    use inkwell::intrinsics::Intrinsic;

    #[cfg(test)]
    if tests::OFF.with(|o| o.get()) {
        return Ok(());
    }
    use inkwell::values::BasicMetadataValueEnum;

    let ctx = m.get_context();
    let (f32t, f64t) = (AnyTypeEnum::FloatType(ctx.f32_type()), AnyTypeEnum::FloatType(ctx.f64_type()));
    let mut sites = Vec::new();
    for f in m.get_functions() {
        for bb in f.get_basic_block_iter() {
            for add in bb.get_instructions() {
                if add.get_opcode() != InstructionOpcode::FAdd || !contracts(add) {
                    continue;
                }
                let ty = add.get_type();
                if ty != f32t && ty != f64t {
                    continue;
                }
                let (Some(a), Some(b)) = (operand(add, 0), operand(add, 1)) else { continue };
                let (Some(ka), Some(kb)) = (kind(a, bb), kind(b, bb)) else { continue };
                // Which operand is the multiply fused: operands are read again when the add
                // is rewritten (an earlier rewrite may have replaced one).
                let pick = match (ka, kb) {
                    (Kind::Product(_), Kind::Other) => 0,
                    (Kind::Other, Kind::Product(_)) => 1,
                    (Kind::Product(m0), Kind::Product(m1)) => match (single_use(m0), single_use(m1)) {
                        (true, _) => 0,
                        (false, true) => 1,
                        (false, false) => continue,
                    },
                    _ => continue,
                };
                sites.push((add, pick));
            }
        }
    }
    if sites.is_empty() {
        return Ok(());
    }
    let b = ctx.create_builder();
    // `llvm.fma` for `float` and for `double`, declared once each.
    let mut declared: Vec<(inkwell::types::BasicTypeEnum<'ctx>, inkwell::values::FunctionValue<'ctx>)> = Vec::new();
    for (add, i) in sites {
        let mul = operand(add, i).and_then(|v| v.as_instruction_value()).ok_or_else(|| err("no multiply"))?;
        let addend = operand(add, 1 - i).ok_or_else(|| err("no addend"))?;
        let (Some(x), Some(y)) = (operand(mul, 0), operand(mul, 1)) else { return Err(err("a multiply without operands")) };
        let ty = x.get_type();
        let fma = match declared.iter().find(|(t, _)| *t == ty) {
            Some((_, f)) => *f,
            None => {
                let f = Intrinsic::find("llvm.fma").and_then(|i| i.get_declaration(m, &[ty])).ok_or_else(|| err("no llvm.fma"))?;
                declared.push((ty, f));
                f
            }
        };
        b.position_before(&add);
        let args: [BasicMetadataValueEnum<'_>; 3] = [x.into(), y.into(), addend.into()];
        let call = b.build_call(fma, &args, "").map_err(err)?;
        let fused =
            call.try_as_basic_value().basic().and_then(|v| v.as_instruction_value()).ok_or_else(|| err("a call without a value"))?;
        if let Ok(flags) = add.get_fast_math_flags() {
            fused.set_fast_math_flags(flags).map_err(err)?;
        }
        add.replace_all_uses_with(&fused);
        add.erase_from_basic_block();
        if mul.get_first_use().is_none() {
            mul.erase_from_basic_block();
        }
    }
    Ok(())
}

fn operand<'ctx>(inst: InstructionValue<'ctx>, i: u32) -> Option<BasicValueEnum<'ctx>> {
    inst.get_operand(i).and_then(|o| o.value())
}

/// Whether `inst` carries `contract` and no other fast-math flag (under fast-math the back end
/// reassociates before it fuses, which is left to it).
fn contracts(inst: InstructionValue<'_>) -> bool {
    use inkwell::values::FastMathFlags;
    inst.get_fast_math_flags().is_ok_and(|f| f == FastMathFlags::AllowContract)
}

/// What an operand of an add is to the back end's fusion.
#[derive(Clone, Copy)]
enum Kind<'ctx> {
    /// A multiply it fuses (`contract`, in the add's block, left a multiply).
    Product(InstructionValue<'ctx>),
    /// Not a multiply it could fuse.
    Other,
}

/// `None` where the back end's choice is not known here: a negation (it makes the add a
/// subtraction first), or a multiply it may rewrite before it fuses (by a constant of
/// magnitude 1 or 2, which become negations and adds, or by a `select`), or one whose flags
/// are not `contract` alone.
fn kind<'ctx>(v: BasicValueEnum<'ctx>, bb: inkwell::basic_block::BasicBlock<'ctx>) -> Option<Kind<'ctx>> {
    let Some(inst) = v.as_instruction_value() else { return Some(Kind::Other) };
    match inst.get_opcode() {
        InstructionOpcode::FNeg => None,
        InstructionOpcode::FMul => {
            let plain = (0..2).all(|i| match operand(inst, i) {
                Some(BasicValueEnum::FloatValue(x)) => match x.get_constant() {
                    Some((c, _)) => !matches!(c.abs(), 1.0 | 2.0),
                    None => x.as_instruction_value().is_none_or(|d| d.get_opcode() != InstructionOpcode::Select),
                },
                _ => false,
            });
            if !plain || !contracts(inst) {
                return None;
            }
            // A multiply in another block is a register here: not fused.
            Some(if inst.get_parent() == Some(bb) { Kind::Product(inst) } else { Kind::Other })
        }
        _ => Some(Kind::Other),
    }
}

/// Whether `inst` has exactly one use.
fn single_use(inst: InstructionValue<'_>) -> bool {
    inst.get_first_use().is_some_and(|u| u.get_next_use().is_none())
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use crate::ir::Layout;
    use crate::target::{Arch, Options, Specialization, Target};

    thread_local! {
        /// Turns the pass off, to compare with the back end fusing on its own.
        pub(super) static OFF: Cell<bool> = const { Cell::new(false) };
    }

    /// PTX for `arch` of the kernel `k` of `src`, with or without the pass.
    fn ptx(src: &str, arch: &str, fuse: bool) -> String {
        let ast = crate::lang::parse(crate::lang::SourceFile::new("k.rs", src)).unwrap();
        let program = crate::lang::check_kernel(&ast, &crate::lang::Env::default(), "k").unwrap();
        let spec = Specialization::uniform(&program, Layout::C);
        OFF.with(|o| o.set(!fuse));
        let compiled = crate::codegen::compile(&crate::codegen::CompileInput {
            program: &program,
            spec: &spec,
            captures: &[],
            options: Options::new(Target::Nvptx(Arch::parse(arch).unwrap())),
            libdevice: None,
        });
        OFF.with(|o| o.set(false));
        match compiled.unwrap().artifact {
            crate::codegen::Artifact::Ptx(p) => p,
            other => panic!("not PTX: {other:?}"),
        }
    }

    /// The pass makes the PTX the back end makes on its own, in every case it decides: a
    /// product with other uses, two products of which one or none has others, products by 2 and
    /// by -1, a negated operand, a product from another block, `f64`, and a chain of products
    /// of one coefficient (the generated benchmark kernel's shape); and it does fuse (the IR
    /// it hands on has `llvm.fma` where the adds were: fewer `add`s to weigh).
    #[test]
    fn fusing_before_the_back_end_gives_the_back_ends_ptx() {
        let src = "#[kernel] pub fn k(x: &mut [f32], y: &mut [f64], a: f32, b: f32, d: f64) {
            let i = global_id_x();
            if i < x.len() && i < y.len() {
                let ab = a * b;
                let mut v = x[i];
                v = v * 1.5 + ab;
                v = ab + v * 0.25;
                v = v * ab + a * 0.75;
                v = a * 0.75 + v * 3.0;
                v = v * 2.0 + a * 1.25;
                v = v * -1.0 + b * 0.5;
                v = -(v * 0.5) + a * 0.125;
                v = (a * b) + (v * b);
                let w = v * 1.75;
                if v > 0.0 { v = w + a; }
                let e = y[i];
                y[i] = e * d + d * 0.5;
                x[i] = v + ab * 0.5;
            }
        }";
        for arch in ["sm_80", "sm_90"] {
            assert_eq!(ptx(src, arch, true), ptx(src, arch, false), "{arch}");
        }
        let mut chain =
            String::from("#[kernel] pub fn k(x: &mut [f32], a: f32) { let i = global_id_x(); if i < x.len() { let mut v = x[i];\n");
        for j in 0..200 {
            chain.push_str(&format!("v = v * {:?} + a * {:?};\n", 1.0 + (j % 7) as f32 * 0.001, 0.5 + (j % 5) as f32 * 0.25));
        }
        chain.push_str("x[i] = v; } }");
        let fused = ptx(&chain, "sm_90", true);
        assert_eq!(fused, ptx(&chain, "sm_90", false));
        assert!(fused.matches("fma.rn.f32").count() >= 150, "{fused}");
    }

    /// The IR the back end gets: the adds of a chain are `llvm.fma` calls.
    #[test]
    fn the_chain_reaches_the_back_end_as_fma_calls() {
        use inkwell::context::Context;
        use inkwell::memory_buffer::MemoryBuffer;
        let ir = r#"
define void @k(ptr %p, float %a, float %v0) {
  %m0 = fmul contract float %a, 5.000000e-01
  %m1 = fmul contract float %v0, 1.500000e+00
  %s1 = fadd contract float %m0, %m1
  %m2 = fmul contract float %s1, 1.250000e+00
  %s2 = fadd contract float %m2, %m0
  %m3 = fmul contract float %s2, 2.000000e+00
  %s3 = fadd contract float %m3, %m0
  %m4 = fmul float %s3, 1.750000e+00
  %s4 = fadd contract float %m4, %m0
  %s5 = fadd contract float %s4, %a
  store float %s5, ptr %p
  ret void
}
"#;
        let context = Context::create();
        let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "k.ll");
        let m = context.create_module_from_ir(buf).unwrap();
        super::fuse_multiply_adds(&m).unwrap();
        let text = m.print_to_string().to_string();
        // %s1: the first product has other uses, the second none: the second is fused. %s2:
        // one product. %s3: a product by 2 is left to the back end, as is %s4 (a product
        // without `contract`) and %s5 (no product).
        assert_eq!(text.matches("call contract float @llvm.fma.f32").count(), 2, "{text}");
        assert!(text.contains("@llvm.fma.f32(float %v0, float 1.500000e+00, float %m0)"), "{text}");
        assert!(text.contains("float 1.250000e+00, float %m0)"), "{text}");
        assert_eq!(text.matches("fadd contract").count(), 3, "{text}");
        assert!(!text.contains("%m1 ="), "the fused product is gone: {text}");
    }
}
