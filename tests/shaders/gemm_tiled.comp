#version 450
// C = A * B, row-major, A: M x K, B: K x N, C: M x N; one invocation per element of C,
// tiles of TS x TS staged in shared memory. Operands at two sets, sizes as push constants,
// the tile size as a specialization constant (the work-group size follows it).
layout(constant_id = 0) const uint TS = 8;
layout(local_size_x_id = 0, local_size_y_id = 0) in;

layout(set = 0, binding = 0) readonly buffer MatA { float a[]; };
layout(set = 0, binding = 1) readonly buffer MatB { float b[]; };
layout(set = 1, binding = 0) writeonly buffer MatC { float c[]; };
layout(push_constant) uniform Sizes { uint M; uint N; uint K; float alpha; } pc;

shared float tileA[TS][TS];
shared float tileB[TS][TS];

void main() {
    uint row = gl_GlobalInvocationID.y;
    uint col = gl_GlobalInvocationID.x;
    uint ly = gl_LocalInvocationID.y;
    uint lx = gl_LocalInvocationID.x;
    float sum = 0.0;
    for (uint t = 0; t < pc.K; t += TS) {
        tileA[ly][lx] = (row < pc.M && t + lx < pc.K) ? a[row * pc.K + t + lx] : 0.0;
        tileB[ly][lx] = (col < pc.N && t + ly < pc.K) ? b[(t + ly) * pc.N + col] : 0.0;
        barrier();
        for (uint k = 0; k < TS; ++k) {
            sum = fma(tileA[ly][k], tileB[k][lx], sum);
        }
        barrier();
    }
    if (row < pc.M && col < pc.N) {
        c[row * pc.N + col] = pc.alpha * sum;
    }
}
