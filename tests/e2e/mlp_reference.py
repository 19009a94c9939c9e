"""A float64 reference of the example trainer (examples/mlp) for tiny shapes, in plain Python.

It follows the trainer's recipe (data.c, model.c): the splitmix64 generator, the teacher that
labels Gaussian inputs, torch.nn.Linear's initialization, ReLU or tanh-GELU, mean softmax
cross-entropy and Adam. If the trainer's forward, backward, optimizer or the GEMMs it asks of
cuBLAS were wrong, its losses would leave this reference's within a step or two.
"""
import math

MASK = (1 << 64) - 1
TEACHER_HIDDEN = 32
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8
GELU_K, GELU_C = 0.7978845608, 0.044715


class Rng:
    """splitmix64, with the trainer's uniform and Box-Muller normal."""

    def __init__(self, state):
        self.state = state & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self, lo, hi):
        return lo + (hi - lo) * ((self.next() >> 40) / 16777216.0)

    def normal(self):
        u1 = self.uniform(0.0, 1.0) + 1.0 / 33554432.0
        u2 = self.uniform(0.0, 1.0)
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.2831853 * u2)


def matrix(rows, cols, draw):
    return [[draw() for _ in range(cols)] for _ in range(rows)]


def matvec(w, x):
    return [sum(wi * xi for wi, xi in zip(row, x)) for row in w]


class Teacher:
    def __init__(self, seed, inputs, classes):
        self.rng = Rng(seed ^ 0x7EAC4E7D5EED0001)
        self.inputs = inputs
        self.w1 = matrix(TEACHER_HIDDEN, inputs, lambda: self.rng.normal() / math.sqrt(inputs))
        self.w2 = matrix(classes, TEACHER_HIDDEN,
                         lambda: self.rng.normal() / math.sqrt(TEACHER_HIDDEN))

    def batch(self, size):
        xs, labels = [], []
        for _ in range(size):
            x = [self.rng.normal() for _ in range(self.inputs)]
            scores = matvec(self.w2, [math.tanh(s) for s in matvec(self.w1, x)])
            xs.append(x)
            labels.append(scores.index(max(scores)))  # the first of equal maxima, as in C
        return xs, labels


def gelu(x):
    return 0.5 * x * (1.0 + math.tanh(GELU_K * (x + GELU_C * x ** 3)))


def gelu_grad(x):
    t = math.tanh(GELU_K * (x + GELU_C * x ** 3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_K * (1.0 + 3.0 * GELU_C * x * x)


class Layer:
    def __init__(self, rng, n_in, n_out):
        bound = 1.0 / math.sqrt(n_in)
        self.w = matrix(n_out, n_in, lambda: rng.uniform(-bound, bound))
        self.b = [rng.uniform(-bound, bound) for _ in range(n_out)]
        self.mw = matrix(n_out, n_in, float)
        self.vw = matrix(n_out, n_in, float)
        self.mb = [0.0] * n_out
        self.vb = [0.0] * n_out

    def forward(self, h):
        return [[z + b for z, b in zip(matvec(self.w, row), self.b)] for row in h]

    def backward(self, dz, h):
        """Returns the gradient with respect to the input h; keeps those of w and b."""
        cols = list(zip(*dz))
        self.dw = [[sum(d * hr[i] for d, hr in zip(col, h)) for i in range(len(h[0]))]
                   for col in cols]
        self.db = [sum(col) for col in cols]
        return [[sum(d * self.w[o][i] for o, d in enumerate(row)) for i in range(len(self.w[0]))]
                for row in dz]


def adam(p, g, m, v, lr, t):
    c1, c2 = 1.0 / (1.0 - BETA1 ** t), 1.0 / (1.0 - BETA2 ** t)
    for k, gk in enumerate(g):
        m[k] = BETA1 * m[k] + (1.0 - BETA1) * gk
        v[k] = BETA2 * v[k] + (1.0 - BETA2) * gk * gk
        p[k] -= lr * m[k] * c1 / (math.sqrt(v[k] * c2) + EPS)


def softmax_xent(logits, labels):
    """Mean loss and its gradient with respect to the logits."""
    loss, grad = 0.0, []
    for row, label in zip(logits, labels):
        top = max(row)
        lse = top + math.log(sum(math.exp(z - top) for z in row))
        loss -= row[label] - lse
        grad.append([(math.exp(z - lse) - (c == label)) / len(labels) for c, z in enumerate(row)])
    return loss / len(labels), grad


def train(seed, batch, input, hidden, layers, classes, steps, lr, act):
    """The trainer's losses, one per step."""
    teacher = Teacher(seed, input, classes)
    rng = Rng(seed)
    widths = [input] + [hidden] * (layers - 1) + [classes]
    net = [Layer(rng, i, o) for i, o in zip(widths[:-1], widths[1:])]
    act_fn = gelu if act == "gelu" else (lambda x: max(x, 0.0))
    act_grad = gelu_grad if act == "gelu" else (lambda x: 1.0 if x > 0.0 else 0.0)
    losses = []
    for step in range(1, steps + 1):
        x, labels = teacher.batch(batch)
        hs, zs = [x], []
        for layer in net:
            zs.append(layer.forward(hs[-1]))
            hs.append([[act_fn(z) for z in row] for row in zs[-1]])
        loss, dz = softmax_xent(zs[-1], labels)
        losses.append(loss)
        for l in range(layers - 1, -1, -1):
            da = net[l].backward(dz, hs[l])
            if l:
                dz = [[d * act_grad(z) for d, z in zip(dr, zr)] for dr, zr in zip(da, zs[l - 1])]
        for layer in net:
            for row, g, m, v in zip(layer.w, layer.dw, layer.mw, layer.vw):
                adam(row, g, m, v, lr, step)
            adam(layer.b, layer.db, layer.mb, layer.vb, lr, step)
    return losses
