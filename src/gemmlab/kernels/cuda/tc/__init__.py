"""The tensor-core levels tc1..tc8 (.py spec beside its .cu source). Their host model and plan are in model/, the
device headers they include in include/, the pre-pass kernels their plans launch in prepass/."""
