#version 450

layout(local_size_x = 16, local_size_y = 16) in;

layout(set = 0, binding = 0) readonly buffer MatrixA {
    float A[];  // M x K matrix
};

layout(set = 0, binding = 1) readonly buffer MatrixB {
    float B[];  // K x N matrix
};

layout(set = 0, binding = 2) writeonly buffer MatrixC {
    float C[];  // M x N output matrix
};

layout(push_constant) uniform PushConstants {
    uint M;
    uint K;
    uint N;
} pc;

void main() {
    uint row = gl_GlobalInvocationID.y;
    uint col = gl_GlobalInvocationID.x;

    if (row >= pc.M || col >= pc.N) {
        return;
    }

    float sum = 0.0;
    for (uint k = 0; k < pc.K; k++) {
        float a_val = A[row * pc.K + k];
        float b_val = B[k * pc.N + col];
        sum += a_val * b_val;
    }

    C[row * pc.N + col] = sum;
}
