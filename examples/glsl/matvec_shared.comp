#version 450

layout(local_size_x = 256) in;

layout(set = 0, binding = 0) readonly buffer MatrixBuffer {
    float matrix[];
};

layout(set = 0, binding = 1) readonly buffer VectorBuffer {
    float vector[];
};

layout(set = 0, binding = 2) writeonly buffer OutputBuffer {
    float output[];
};

layout(push_constant) uniform PushConstants {
    uint M;
    uint N;
} pc;

// Shared memory for the input vector
shared float shared_vector[256];  // Adjust size based on N

void main() {
    uint local_id = gl_LocalInvocationID.x;
    uint row = gl_GlobalInvocationID.x;

    // Cooperatively load vector into shared memory
    // Each thread loads one element (or more if N > 256)
    for (uint i = local_id; i < pc.N; i += 256) {
        shared_vector[i] = vector[i];
    }

    // Synchronize to ensure all threads have loaded their data
    barrier();

    if (row >= pc.M) {
        return;
    }

    // Compute dot product using shared memory
    float sum = 0.0;
    for (uint col = 0; col < pc.N; col++) {
        uint matrix_index = row * pc.N + col;
        sum += matrix[matrix_index] * shared_vector[col];
    }

    output[row] = sum;
}
