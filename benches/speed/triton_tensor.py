"""The tensor-core parts of the speed suite (`gemm`, `attention`: benches/speed/kernels/gemm.rs
and attention.rs, measured by cases/gemm.rs and attention.rs) in Triton and torch, on the same
sizes and inputs' distributions, each result checked against float64 on sampled outputs before
it is timed. triton_speed.py runs them (PARTS); torch's rows come with them (implementation
`torch`), since Triton runs where torch does:

- torch: torch.matmul (cuBLAS) in bf16, f16, fp32 with TF32 enabled and plain fp32; bias + GELU
  as an ML user writes it (the product, + bias, F.gelu); scaled_dot_product_attention with the
  flash backend. cuBLAS at 8192^3 (bf16, TF32) is the dense peak tensor_table.py reports each
  row's fraction of.
- triton: the matmul tutorial's kernel (python/tutorials/03-matrix-multiplication.py: its
  autotuned configurations, GROUP_SIZE_M ordering, an activation fused in the epilogue, here
  GELU after a bias) and the fused-attention tutorial's forward kernel (06-fused-attention.py:
  block pointers, the online softmax in base 2, causal attention in two stages).
"""
import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

DEV = "cuda"


def configs():
    """The tutorial's CUDA configurations for 16-bit and fp32 inputs that suit these sizes (its
    smallest ones, for small matrices, are left out so that autotuning stays within the part's
    time limit)."""
    c = triton.Config
    return [
        c({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}, num_stages=3, num_warps=8),
        c({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        c({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        c({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        c({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
    ]


@triton.autotune(configs=configs(), key=["M", "N", "K", "PRECISION", "ACTIVATION"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr, PRECISION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator, input_precision=PRECISION)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    if ACTIVATION == "bias_gelu":
        x = accumulator + tl.load(bias_ptr + offs_cn).to(tl.float32)[None, :]
        accumulator = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    c = accumulator.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)



def matmul(a, b, c, bias=None, precision="tf32"):
    M, K = a.shape
    _, N = b.shape
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)
    matmul_kernel[grid](a, b, c, bias if bias is not None else c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), ACTIVATION="bias_gelu" if bias is not None else "", PRECISION=precision)


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m, qk_scale, BLOCK_M: tl.constexpr,
                    HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr, offs_m: tl.constexpr,
                    offs_n: tl.constexpr, N_CTX: tl.constexpr):
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    K_block_ptr = tl.advance(K_block_ptr, (0, lo))
    V_block_ptr = tl.advance(V_block_ptr, (lo, 0))
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(K_block_ptr)
        qk = tl.dot(q, k)
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V_block_ptr)
        p = p.to(v.dtype)
        acc = tl.dot(p, v, acc)
        m_i = m_ij
        V_block_ptr = tl.advance(V_block_ptr, (BLOCK_N, 0))
        K_block_ptr = tl.advance(K_block_ptr, (0, BLOCK_N))
    return acc, l_i, m_i


# The tutorial's configurations (BLOCK_M 64 or 128, BLOCK_N 32 or 64, 3, 4 or 7 stages, 4 or 8
# warps, 8 warps only for 128 x 128 tiles), less the 7-stage ones, so that autotuning the four
# cases stays within the part's time limit.
attn_configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=s, num_warps=w)
                for bm in [64, 128] for bn in [32, 64] for s in [3, 4] for w in [4, 8]
                if not (bm * bn < 128 * 128 and w == 8)]


@triton.autotune(attn_configs, key=["N_CTX", "HEAD_DIM", "STAGE"])
@triton.jit
def _attn_fwd(Q, K, V, sm_scale, M, Out, stride_qz, stride_qh, stride_qm, stride_qk, stride_kz, stride_kh, stride_kn,
              stride_kk, stride_vz, stride_vh, stride_vk, stride_vn, stride_oz, stride_oh, stride_om, stride_on, Z, H, N_CTX,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    qvk_offset = off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh
    Q_block_ptr = tl.make_block_ptr(base=Q + qvk_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_qm, stride_qk),
                                    offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    V_block_ptr = tl.make_block_ptr(base=V + qvk_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_vk, stride_vn),
                                    offsets=(0, 0), block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0))
    K_block_ptr = tl.make_block_ptr(base=K + qvk_offset, shape=(HEAD_DIM, N_CTX), strides=(stride_kk, stride_kn),
                                    offsets=(0, 0), block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1))
    O_block_ptr = tl.make_block_ptr(base=Out + qvk_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_om, stride_on),
                                    offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504
    q = tl.load(Q_block_ptr)
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m, qk_scale, BLOCK_M, HEAD_DIM,
                                        BLOCK_N, 4 - STAGE, offs_m, offs_n, N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m, qk_scale, BLOCK_M, HEAD_DIM,
                                        BLOCK_N, 2, offs_m, offs_n, N_CTX)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    tl.store(O_block_ptr, acc.to(Out.type.element_ty))



def attention(q, k, v, o, lse, causal):
    bsz, heads, s, d = q.shape
    grid = lambda args: (triton.cdiv(s, args["BLOCK_M"]), bsz * heads, 1)
    _attn_fwd[grid](q, k, v, 1.0 / math.sqrt(d), lse, o, q.stride(0), q.stride(1), q.stride(2), q.stride(3), k.stride(0),
                    k.stride(1), k.stride(2), k.stride(3), v.stride(0), v.stride(1), v.stride(2), v.stride(3), o.stride(0),
                    o.stride(1), o.stride(2), o.stride(3), bsz, heads, N_CTX=s, HEAD_DIM=d, STAGE=3 if causal else 1)


# The parts: the same sizes as cases/gemm.rs and attention.rs, uniform inputs in [-1, 1).

def gen(seed):
    return torch.Generator(device=DEV).manual_seed(seed)


def uniform(shape, seed, dtype=torch.float32):
    return (torch.rand(shape, device=DEV, generator=gen(seed)) * 2 - 1).to(dtype)


def gemm_check(a, b, c, tol, bias=None, gelu=False):
    """Sampled outputs against float64: the error over (sum |a b| + |ref|)."""
    def verify():
        m, n = c.shape
        idx = torch.randint(0, min(m, n), (256, 2), device=DEV, generator=gen(41))
        terms = a[idx[:, 0], :].double() * b[:, idx[:, 1]].T.double()
        want = terms.sum(1)
        if bias is not None:
            want = want + bias[idx[:, 1]].double()
        if gelu:
            want = 0.5 * want * (1 + torch.erf(want / math.sqrt(2)))
        got = c[idx[:, 0], idx[:, 1]].double()
        worst = ((got - want).abs() / (terms.abs().sum(1) + want.abs())).max().item()
        assert worst < tol, "error %.2e of (sum |a b| + |c|), tolerance %.0e" % (worst, tol)
        return "max err %.1e of (sum|ab|+|c|), 256 samples" % worst
    return verify


class As:
    """A context whose rows carry another implementation's name (torch's rows in Triton's run)."""

    def __init__(self, ctx, impl):
        self.ctx, self.impl = ctx, impl

    def row(self, *args, **kw):
        saved = self.ctx.impl
        self.ctx.impl = self.impl
        try:
            self.ctx.row(*args, **kw)
        finally:
            self.ctx.impl = saved


def part_gemm(ctx):
    t = As(ctx, "torch")
    sizes = [ctx.size(4096, 128), ctx.size(8192, 256)]
    for n in sizes:
        flops = 2.0 * n ** 3
        for name, dt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
            a, b = uniform((n, n), 11, dt), uniform((n, n), 12, dt)
            c = torch.empty((n, n), device=DEV, dtype=dt)
            t.row("gemm_%s_%d" % (name, n), lambda: torch.matmul(a, b, out=c), gemm_check(a, b, c, 8e-3), flops=flops)
            ctx.row("gemm_%s_%d" % (name, n), lambda: matmul(a, b, c), gemm_check(a, b, c, 8e-3), flops=flops)
            if name == "bf16":
                bias = uniform((n,), 13, dt)
                out = [c]

                def unfused():
                    out[0] = F.gelu(torch.matmul(a, b) + bias)
                t.row("gemm_bias_gelu_bf16_%d" % n, unfused, lambda: gemm_check(a, b, out[0], 8e-3, bias=bias, gelu=True)(), flops=flops)
                ctx.row("gemm_bias_gelu_bf16_%d" % n, lambda: matmul(a, b, c, bias=bias), gemm_check(a, b, c, 8e-3, bias=bias, gelu=True), flops=flops)
            del a, b, c
        a, b = uniform((n, n), 21), uniform((n, n), 22)
        c = torch.empty((n, n), device=DEV)

        def tf32():
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                torch.matmul(a, b, out=c)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = False
        t.row("gemm_tf32_%d" % n, tf32, gemm_check(a, b, c, 4e-3), flops=flops)
        ctx.row("gemm_tf32_%d" % n, lambda: matmul(a, b, c, precision="tf32"), gemm_check(a, b, c, 4e-3), flops=flops)
        del a, b, c
    n = ctx.size(4096, 128)
    a, b = uniform((n, n), 21), uniform((n, n), 22)
    c = torch.empty((n, n), device=DEV)
    torch.backends.cuda.matmul.allow_tf32 = False
    t.row("sgemm_%d" % n, lambda: torch.matmul(a, b, out=c), gemm_check(a, b, c, 1e-5), flops=2.0 * n ** 3)
    ctx.row("sgemm_%d" % n, lambda: matmul(a, b, c, precision="ieee"), gemm_check(a, b, c, 1e-5), flops=2.0 * n ** 3)


def attn_check(q, k, v, o, causal):
    def verify():
        bsz, heads, s, d = q.shape
        scale = 1.0 / math.sqrt(d)
        worst = 0.0
        for t in range(32):
            z, h, i = t % bsz, (t * 7) % heads, (t * 977) % s
            sc = (q[z, h, i].double() @ k[z, h].double().T) * scale
            if causal:
                sc[i + 1:] = -float("inf")
            p = torch.softmax(sc, 0)
            want = p @ v[z, h].double()
            # The scale of the weighted sum (its own name: `scale` is the softmax's).
            mag = p @ v[z, h].double().abs()
            got = o[0][z, h, i].double() if isinstance(o, list) else o[z, h, i].double()
            worst = max(worst, ((got - want).abs() / mag.clamp_min(1e-30)).max().item())
        assert worst < 1e-2, "error %.2e of sum p |v|, tolerance 1e-2" % worst
        return "max err %.1e of sum p |v|, 32 rows" % worst
    return verify


def part_attention(ctx):
    t = As(ctx, "torch")
    batch, seq = ctx.size(4, 1), ctx.size(4096, 128)
    for d in (64, 128):
        for causal in (False, True):
            heads = ctx.size(2048 // d, 2)
            q, k, v = (uniform((batch, heads, seq, d), 31 + i, torch.bfloat16) for i in range(3))
            flops = 4.0 * batch * heads * seq * seq * d / (2 if causal else 1)
            name = "attn_d%d%s" % (d, "_causal" if causal else "")
            out = [None]

            def sdpa():
                from torch.nn.attention import SDPBackend, sdpa_kernel
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    out[0] = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            t.row(name, sdpa, attn_check(q, k, v, out, causal), flops=flops)
            o = torch.empty_like(q)
            lse = torch.empty((batch, heads, seq), device=DEV, dtype=torch.float32)
            ctx.row(name, lambda: attention(q, k, v, o, lse, causal), attn_check(q, k, v, o, causal), flops=flops)
            del q, k, v, o


PARTS = {
    "gemm": part_gemm,
    "attention": part_attention,
}
