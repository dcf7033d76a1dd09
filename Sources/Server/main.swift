print("chronir-server: skeleton")
