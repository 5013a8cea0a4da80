#version 450

#define TILE_SIZE 16

layout(local_size_x = TILE_SIZE, local_size_y = TILE_SIZE) in;

layout(set = 0, binding = 0) readonly buffer MatrixA {
    float A[];
};

layout(set = 0, binding = 1) readonly buffer MatrixB {
    float B[];
};

layout(set = 0, binding = 2) writeonly buffer MatrixC {
    float C[];
};

layout(push_constant) uniform PushConstants {
    uint M;
    uint K;
    uint N;
} pc;

// Shared memory for tiles
shared float tile_A[TILE_SIZE][TILE_SIZE];
shared float tile_B[TILE_SIZE][TILE_SIZE];

void main() {
    uint local_row = gl_LocalInvocationID.y;
    uint local_col = gl_LocalInvocationID.x;
    uint global_row = gl_GlobalInvocationID.y;
    uint global_col = gl_GlobalInvocationID.x;

    float sum = 0.0;

    // Loop over tiles
    uint num_tiles = (pc.K + TILE_SIZE - 1) / TILE_SIZE;

    for (uint tile = 0; tile < num_tiles; tile++) {
        // Load tile of A into shared memory
        uint a_col = tile * TILE_SIZE + local_col;
        if (global_row < pc.M && a_col < pc.K) {
            tile_A[local_row][local_col] = A[global_row * pc.K + a_col];
        } else {
            tile_A[local_row][local_col] = 0.0;
        }

        // Load tile of B into shared memory
        uint b_row = tile * TILE_SIZE + local_row;
        if (b_row < pc.K && global_col < pc.N) {
            tile_B[local_row][local_col] = B[b_row * pc.N + global_col];
        } else {
            tile_B[local_row][local_col] = 0.0;
        }

        // Synchronize to ensure tiles are loaded
        barrier();

        // Compute partial dot product using tiles
        for (uint k = 0; k < TILE_SIZE; k++) {
            sum += tile_A[local_row][k] * tile_B[k][local_col];
        }

        // Synchronize before loading next tile
        barrier();
    }

    // Write result
    if (global_row < pc.M && global_col < pc.N) {
        C[global_row * pc.N + global_col] = sum;
    }
}
