"""Corpus (blind, batch 2): a PyTorch Lightning fit of a small MLP.

Program: lightning's Trainer (one GPU, 1 epoch, progress bar on, no logger or checkpoints)
trains a 784-256-10 MLP on a TensorDataset of random CPU tensors, batch 64, num_workers=0;
training_step logs the loss to the progress bar every step. No NVTX of its own. 200 steps.
Expected, written before it was recorded (2026-11-26): cpu-work (Lightning's Python between
steps: hooks, logging, the progress bar, the batch collation); the GPU idle for most of each
step; about 200 steps.
"""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)


if __name__ == "__main__":
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64 * 200, 784), torch.randint(0, 10, (64 * 200,)))
    trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=1, logger=False,
                         enable_checkpointing=False, default_root_dir="/tmp/blind-lightning",
                         enable_model_summary=False)
    trainer.fit(Net(), DataLoader(data, batch_size=64, num_workers=0))
    print("done")
