#version 450

layout(local_size_x = 256) in;

layout(set = 0, binding = 0) readonly buffer MatrixBuffer {
    float matrix[];  // M x N matrix in row-major order
};

layout(set = 0, binding = 1) readonly buffer VectorBuffer {
    float vector[];  // N-dimensional vector
};

layout(set = 0, binding = 2) writeonly buffer OutputBuffer {
    float output[];  // M-dimensional output vector
};

layout(push_constant) uniform PushConstants {
    uint M;  // Number of rows
    uint N;  // Number of columns
} pc;

void main() {
    uint row = gl_GlobalInvocationID.x;

    if (row >= pc.M) {
        return;
    }

    // Compute dot product of matrix row with vector
    float sum = 0.0;
    for (uint col = 0; col < pc.N; col++) {
        uint matrix_index = row * pc.N + col;
        sum += matrix[matrix_index] * vector[col];
    }

    output[row] = sum;
}
