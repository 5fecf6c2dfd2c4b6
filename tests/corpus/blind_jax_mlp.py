"""Corpus (blind, batch 2): a JAX training step compiled with jax.jit.

Program: a 4-layer MLP (width 8192, bf16) trained with plain SGD on one fixed batch of 8192
rows; the whole update is one jitted function, called 30 times; the loss is fetched with
float() every step. XLA launches its own kernels through the driver API; no PyTorch, no NVTX.
Expected, written before it was recorded (2026-11-26): gpu-bound (large matrix products), the GPU
busy for at least 90% of the steady step; 30 steps (within 3).
"""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax
import jax.numpy as jnp

key = jax.random.PRNGKey(0)
keys = jax.random.split(key, 6)
params = [jax.random.normal(k, (8192, 8192), jnp.bfloat16) * 0.01 for k in keys[:4]]
x = jax.random.normal(keys[4], (8192, 8192), jnp.bfloat16)
y = jax.random.normal(keys[5], (8192, 8192), jnp.bfloat16)


def loss_fn(params, x, y):
    h = x
    for w in params[:-1]:
        h = jax.nn.gelu(h @ w)
    return jnp.mean((h @ params[-1] - y).astype(jnp.float32) ** 2)


@jax.jit
def update(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return [w - 1e-3 * g for w, g in zip(params, grads)], loss


for step in range(30):
    params, loss = update(params, x, y)
    value = float(loss)
print("last loss", value)
